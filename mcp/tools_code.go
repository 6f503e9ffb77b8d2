package mcp

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/coderun/coderun/sandbox"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// InputFile is a file placed in the workspace before code runs.
type InputFile struct {
	Path          string `json:"path" jsonschema:"path in the workspace (/work), relative, with / separators"`
	Content       string `json:"content,omitempty" jsonschema:"the file's text"`
	ContentBase64 string `json:"content_base64,omitempty" jsonschema:"the file's bytes, base64-encoded (instead of content, for binary files)"`
}

func (f InputFile) bytes() ([]byte, error) {
	if f.ContentBase64 != "" {
		if f.Content != "" {
			return nil, fmt.Errorf("file %s: give content or content_base64, not both", f.Path)
		}
		b, err := base64.StdEncoding.DecodeString(f.ContentBase64)
		if err != nil {
			return nil, fmt.Errorf("file %s: content_base64: %w", f.Path, err)
		}
		return b, nil
	}
	return []byte(f.Content), nil
}

// RunCodeInput is run_code's input.
type RunCodeInput struct {
	Code           string      `json:"code" jsonschema:"the program"`
	Language       string      `json:"language,omitempty" jsonschema:"{languages}"`
	Files          []InputFile `json:"files,omitempty" jsonschema:"files placed in the workspace before the program starts"`
	Stdin          string      `json:"stdin,omitempty" jsonschema:"text fed to the program's standard input"`
	TimeoutSeconds float64     `json:"timeout_seconds,omitempty" jsonschema:"wall-time limit in seconds (default: the server's)"`
}

// OutputFile is a file a one-shot run created or changed.
type OutputFile struct {
	Path string `json:"path"`
	Kind string `json:"kind"`
	Size int64  `json:"size"`
	// Truncated is set when only the start of the file came back.
	Truncated bool `json:"truncated,omitempty"`
}

// RunCodeResult is run_code's structured result.
type RunCodeResult struct {
	// Reason is why the program ended: exited, timeout, cpu_limit,
	// memory_limit, output_limit, killed or setup_error.
	Reason     string       `json:"reason"`
	ExitCode   int          `json:"exit_code"`
	Signal     string       `json:"signal,omitempty"`
	Stdout     string       `json:"stdout"`
	Stderr     string       `json:"stderr"`
	Summary    string       `json:"summary"`
	Files      []OutputFile `json:"files,omitempty"`
	WallMS     float64      `json:"wall_ms"`
	CPUMS      float64      `json:"cpu_ms"`
	PeakMemory int64        `json:"peak_memory_bytes"`
}

// maxFileContent is how much of each file a one-shot run returns.
const maxFileContent = 1 << 20

func (t *tenant) addCodeTools() {
	sdk.AddTool(t.server, &sdk.Tool{
		Name:        "run_code",
		Title:       "Run code once",
		InputSchema: inputSchema[RunCodeInput](runLanguages()),
		Description: "Run a program once in a fresh, isolated sandbox (no network) and report exactly what happened: " +
			"stdout, stderr, exit code, why it ended (exited, timeout, memory_limit...), resource usage, and the files it " +
			"wrote (PNG files come back as images, other files as embedded resources). Nothing is kept afterwards; " +
			"use session_run to keep variables between calls. A program that fails is an error result with its output.",
		Annotations: &sdk.ToolAnnotations{OpenWorldHint: new(false)},
	}, t.runCode)
}

func (t *tenant) runCode(ctx context.Context, req *sdk.CallToolRequest, in RunCodeInput) (*sdk.CallToolResult, *RunCodeResult, error) {
	lang, err := parseLanguage(in.Language, sandbox.Python)
	if err != nil {
		return nil, nil, err
	}
	limits := t.svc.opts.Limits
	if in.TimeoutSeconds < 0 {
		return nil, nil, errors.New("timeout_seconds must be positive")
	}
	if in.TimeoutSeconds > 0 {
		limits.WallTime = time.Duration(in.TimeoutSeconds * float64(time.Second))
	}
	rq := sandbox.Request{Language: lang, Code: in.Code, Stdin: []byte(in.Stdin), Limits: limits, FileContents: maxFileContent}
	for _, f := range in.Files {
		b, err := f.bytes()
		if err != nil {
			return nil, nil, err
		}
		rq.Files = append(rq.Files, sandbox.File{Path: f.Path, Content: b})
	}
	if _, err := rq.Validate(sandbox.DefaultLimits); err != nil {
		return nil, nil, err
	}
	release, err := t.startExecution()
	if err != nil {
		return nil, nil, err
	}
	defer release()
	_, stop := newProgress(ctx, req, "run_code")
	res, err := t.svc.opts.Runtime.Run(ctx, rq)
	stop()
	if err != nil {
		return nil, nil, fmt.Errorf("run_code: %w", err)
	}
	out := &RunCodeResult{Reason: string(res.Reason), ExitCode: res.ExitCode, Signal: res.Signal, Stdout: res.Stdout, Stderr: res.Stderr,
		Summary: res.Summary(), WallMS: ms(res.Usage.Wall), CPUMS: ms(res.Usage.CPU()), PeakMemory: res.Usage.PeakMemory}
	var files []sdk.Content
	for _, f := range res.Files {
		out.Files = append(out.Files, OutputFile{Path: f.Path, Kind: string(f.Kind), Size: f.Size, Truncated: f.ContentTruncated})
		if f.Kind == sandbox.KindFile && f.SameFileAs == "" && !f.ContentTruncated {
			files = append(files, fileContent("coderun://run_code/files/"+escapePath(f.Path), f.Path, f.Content)...)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s wall, %s CPU)\n", res.Summary(), res.Usage.Wall.Round(time.Millisecond), res.Usage.CPU().Round(time.Millisecond))
	section(&b, "stdout", res.Stdout)
	if res.StdoutTruncated {
		b.WriteString("(stdout truncated at the output limit)\n")
	}
	section(&b, "stderr", res.Stderr)
	if res.StderrTruncated {
		b.WriteString("(stderr truncated at the output limit)\n")
	}
	for _, f := range out.Files {
		fmt.Fprintf(&b, "file: %s (%s, %d bytes)\n", f.Path, f.Kind, f.Size)
	}
	return &sdk.CallToolResult{IsError: !res.OK(),
		Content: append([]sdk.Content{&sdk.TextContent{Text: strings.TrimRight(b.String(), "\n")}}, files...)}, out, nil
}

// parseLanguage reads a language name; "" is def.
func parseLanguage(s string, def sandbox.Language) (sandbox.Language, error) {
	if s == "" {
		return def, nil
	}
	l := sandbox.Language(strings.ToLower(strings.TrimSpace(s)))
	for _, known := range sandbox.Languages() {
		if l == known {
			return l, nil
		}
	}
	return "", fmt.Errorf("language %q: want one of %v", s, sandbox.Languages())
}
