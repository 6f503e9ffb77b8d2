package agent

import (
	"context"
	"errors"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/coderun/coderun/language"
	"github.com/coderun/coderun/llm"
)

// Spans follow OpenTelemetry's semantic conventions for generative AI: one
// "invoke_agent coderun" span per stretch of a run (a run resumed later
// gets another), with a "chat {model}" span per model call and an
// "execute_tool run_code" span per execution inside it.

const instrumentation = "github.com/coderun/coderun/agent"

type tracer struct {
	t        trace.Tracer
	provider string // gen_ai.provider.name
	model    string // gen_ai.request.model
}

func newTracer(tp trace.TracerProvider, spec string) tracer {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	provider, model, _ := strings.Cut(spec, ":")
	return tracer{t: tp.Tracer(instrumentation), provider: provider, model: model}
}

func (t tracer) invokeAgent(ctx context.Context, runID string, resumed bool) (context.Context, trace.Span) {
	return t.t.Start(ctx, "invoke_agent coderun", trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(
			semconv.GenAIOperationNameInvokeAgent,
			semconv.GenAIAgentName("coderun"),
			semconv.GenAIAgentID(runID),
			semconv.GenAIConversationID(runID),
			semconv.GenAIProviderNameKey.String(t.provider),
			semconv.GenAIRequestModel(t.model),
			attribute.Bool("coderun.resumed", resumed),
		))
}

func (t tracer) chat(ctx context.Context, runID, purpose string) (context.Context, trace.Span) {
	return t.t.Start(ctx, "chat "+t.model, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			semconv.GenAIOperationNameChat,
			semconv.GenAIProviderNameKey.String(t.provider),
			semconv.GenAIRequestModel(t.model),
			semconv.GenAIConversationID(runID),
			attribute.String("coderun.purpose", purpose),
		))
}

func endChat(span trace.Span, resp *llm.Response, err error) {
	if resp != nil {
		span.SetAttributes(
			semconv.GenAIResponseModel(resp.Model),
			semconv.GenAIUsageInputTokens(int(resp.Usage.InputTokens)),
			semconv.GenAIUsageOutputTokens(int(resp.Usage.OutputTokens)),
			semconv.GenAIResponseFinishReasons(string(resp.StopReason)),
			attribute.Int("coderun.http_attempts", resp.Attempts),
		)
	}
	if err != nil {
		span.SetAttributes(semconv.ErrorTypeKey.String(errorType(err)))
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

func (t tracer) executeTool(ctx context.Context, callID string, lang language.Language, attempt int) (context.Context, trace.Span) {
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameExecuteTool,
		semconv.GenAIToolName(llm.RunCodeToolName),
		semconv.GenAIToolTypeKey.String("function"),
		attribute.String("coderun.language", string(lang)),
		attribute.Int("coderun.attempt", attempt),
	}
	if callID != "" {
		attrs = append(attrs, semconv.GenAIToolCallID(callID))
	}
	return t.t.Start(ctx, "execute_tool "+llm.RunCodeToolName, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attrs...))
}

func endExecute(span trace.Span, ex *Execution, v verdict, err error) {
	if ex != nil {
		span.SetAttributes(
			attribute.String("coderun.reason", string(ex.Record.Reason)),
			attribute.Int("coderun.exit_code", ex.Record.ExitCode),
			attribute.Int64("coderun.duration_ms", ex.Record.DurationMS),
		)
	}
	span.SetAttributes(attribute.String("coderun.class", string(v.Class)))
	switch {
	case err != nil:
		span.SetAttributes(semconv.ErrorTypeKey.String(errorType(err)))
		span.SetStatus(codes.Error, err.Error())
	case v.Class != ClassSuccess && v.Class != "":
		span.SetAttributes(semconv.ErrorTypeKey.String(string(v.Kind)))
		span.SetStatus(codes.Error, v.errorLine())
	}
	span.End()
}

// errorType names an error for error.type: the llm sentinel it wraps, or
// a generic word.
func errorType(err error) string {
	for _, k := range []error{llm.ErrAuth, llm.ErrModelNotFound, llm.ErrRateLimited, llm.ErrServer,
		llm.ErrUnreachable, llm.ErrTimeout, llm.ErrBadRequest, llm.ErrBadResponse, llm.ErrMalformedToolCall} {
		if errors.Is(err, k) {
			return strings.ReplaceAll(k.Error(), " ", "_")
		}
	}
	if errors.Is(err, context.Canceled) {
		return "cancelled"
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timeout"
	}
	return "_OTHER"
}
