// Package telemetry sets up the export of coderun's OpenTelemetry spans
// over OTLP/HTTP. It is off unless the standard OpenTelemetry environment
// asks for it: OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (and OTEL_SDK_DISABLED is not true).
// The exporter reads the rest of the standard variables itself (headers,
// timeout, compression, certificates).
package telemetry

import (
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// Enabled reports whether getenv configures an OTLP endpoint.
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// FromEnv returns a tracer provider exporting over OTLP/HTTP when getenv
// (os.Getenv) configures an endpoint, and nil otherwise. shutdown flushes
// and stops it; call it before the process exits.
func FromEnv(ctx context.Context, getenv func(string) string, version string) (tp trace.TracerProvider, shutdown func(context.Context) error, err error) {
	if !Enabled(getenv) {
		return nil, func(context.Context) error { return nil }, nil
	}
	// The endpoint is taken from getenv, so that what Enabled saw is what
	// is used; the other standard variables are read by the exporter.
	var opts []otlptracehttp.Option
	if u := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); u != "" {
		opts = append(opts, otlptracehttp.WithEndpointURL(u))
	} else {
		opts = append(opts, otlptracehttp.WithEndpointURL(strings.TrimRight(getenv("OTEL_EXPORTER_OTLP_ENDPOINT"), "/")+"/v1/traces"))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("telemetry: OTLP exporter: %w", err)
	}
	res := resource.NewWithAttributes(semconv.SchemaURL,
		semconv.ServiceName("coderun"), semconv.ServiceVersion(version))
	p := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return p, p.Shutdown, nil
}
