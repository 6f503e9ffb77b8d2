package toolchain

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/coderun/coderun/language"
	"github.com/coderun/coderun/sandbox"
)

// run runs req: an interpreted language as one run (interpret), a compiled
// one in a new sandbox of the wrapped runtime, the source written, the
// compile step, then the run step.
func (r *Runtime) run(ctx context.Context, spec *language.Spec, tool string, req sandbox.Request) (*sandbox.Result, error) {
	if err := validate(&req, spec); err != nil {
		return nil, err
	}
	dir := sandbox.WorkDir + "/" + BuildDir
	b, err := spec.Plan(tool, dir, CacheDir, req.Name, req.Code, req.CompileArgs, func(p string) bool {
		_, err := os.Stat(filepath.Join(r.root, p))
		return err == nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", sandbox.ErrInvalid, err)
	}
	if b.Compile == nil {
		return r.interpret(ctx, req, b)
	}
	irt, ok := r.inner.(sandbox.Interactive)
	if !ok {
		return nil, fmt.Errorf("%w: %w: the %s runtime keeps no sandboxes, which %s's two steps need", sandbox.ErrInvalid, sandbox.ErrUnavailable, r.inner.Name(), spec.Title)
	}
	runLim := req.Limits.WithDefaults(sandbox.DefaultLimits)
	compLim := req.CompileLimits.WithDefaults(sandbox.DefaultCompileLimits)
	if canRunTogether(compLim, runLim) {
		res, retry, err := r.together(ctx, irt, b, req, compLim, runLim)
		if !retry {
			return res, err
		}
	}
	return r.separate(ctx, irt, b, req, compLim, runLim)
}

// separate runs a compiled program's two steps as two programs, one after
// the other, in a new sandbox of irt: the compile step under compLim, then,
// if it made a program, the run step under runLim.
func (r *Runtime) separate(ctx context.Context, irt sandbox.Interactive, b *language.Build, req sandbox.Request, compLim, runLim sandbox.Limits) (*sandbox.Result, error) {
	// The sandbox holds both steps: the larger workspace of the two.
	boxLim := runLim
	boxLim.WorkspaceBytes = max(runLim.WorkspaceBytes, compLim.WorkspaceBytes)
	sb, err := irt.NewSandbox(ctx, sandbox.Spec{Limits: boxLim, Files: req.Files})
	if err != nil {
		return setupError(r.inner.Name(), fmt.Errorf("create sandbox: %w", err)), nil
	}
	defer sb.Close()
	if err := placeBuild(sb, nil, b.File, req.Code); err != nil {
		return setupError(r.inner.Name(), fmt.Errorf("write source: %w", err)), nil
	}
	script := "cd " + quote(sandbox.WorkDir+"/"+BuildDir) + " && exec " + quoteArgs(b.Compile)
	compiled, err := sandbox.RunIn(ctx, sb, sandbox.Program{Language: sandbox.Bash, Code: script, Env: mergeEnv(b.Env, req.Env)}, compLim, nil)
	if err != nil {
		return setupError(r.inner.Name(), fmt.Errorf("compile: %w", err)), nil
	}
	compiled.Runtime = r.inner.Name()
	if ctx.Err() != nil || compiled.Reason == sandbox.ReasonKilled {
		return compiled, nil
	}
	if !compiled.OK() {
		return compileError(compiled), nil
	}
	script = "cd " + quote(sandbox.WorkDir) + " && exec " + quoteArgs(b.Run)
	res, err := sandbox.RunIn(ctx, sb, sandbox.Program{Language: sandbox.Bash, Code: script, Env: req.Env}, runLim, req.Stdin)
	if err != nil {
		return setupError(r.inner.Name(), fmt.Errorf("run: %w", err)), nil
	}
	res.Runtime, res.Compile = r.inner.Name(), compiled
	if err = collect(res, sb, req.Files, req.FileContents, boxLim.WorkspaceBytes); err != nil {
		res.Error = strings.TrimPrefix(res.Error+"; ", "; ") + "listing files: " + err.Error()
	}
	return res, nil
}

// interpret runs a program without a compile step as one run of the
// wrapped runtime (one sandbox, as a native language's): a Bash program
// that runs the interpreter on the source, which is placed in the build
// directory with the request's files.
func (r *Runtime) interpret(ctx context.Context, req sandbox.Request, b *language.Build) (*sandbox.Result, error) {
	one := req
	one.Language, one.Name, one.CompileArgs, one.CompileLimits = sandbox.Bash, "", nil, sandbox.Limits{}
	one.Code = prepare(b.Env) + "cd " + quote(sandbox.WorkDir) + " && exec " + quoteArgs(b.Run)
	one.Env = mergeEnv(b.Env, req.Env)
	one.Files = append(slices.Clone(req.Files), sandbox.File{Path: BuildDir + "/" + b.File, Content: []byte(req.Code)})
	res, err := r.inner.Run(ctx, one)
	if err != nil || res == nil {
		return res, err
	}
	inBuild := func(p string) bool { return p == BuildDir || strings.HasPrefix(p, BuildDir+"/") }
	res.Files = slices.DeleteFunc(res.Files, func(f sandbox.FileInfo) bool { return inBuild(f.Path) })
	res.Removed = slices.DeleteFunc(res.Removed, inBuild)
	return res, nil
}

// prepare is the shell that makes the cache directory's scratch
// directories (HOME, TMPDIR) before a program whose environment env names
// them runs (nothing for one that does not: a process less to start).
func prepare(env map[string]string) string {
	for _, v := range env {
		if strings.HasPrefix(v, CacheDir+"/") {
			return "mkdir -p " + quote(CacheDir+"/tmp") + " " + quote(CacheDir+"/home") + " && "
		}
	}
	return ""
}

// compileError is the result of a run whose compile step made no program.
func compileError(c *sandbox.Result) *sandbox.Result {
	res := &sandbox.Result{
		Stdout: c.Stdout, Stderr: c.Stderr, StdoutTruncated: c.StdoutTruncated, StderrTruncated: c.StderrTruncated,
		ExitCode: c.ExitCode, Signal: c.Signal, Reason: sandbox.ReasonCompileError, Usage: c.Usage,
		Compile: c, Runtime: c.Runtime, Pooled: c.Pooled,
	}
	switch c.Reason {
	case sandbox.ReasonExited:
		res.Error = "compilation failed: " + c.Summary()
	default:
		res.Error = "compilation stopped: " + c.Summary()
	}
	return res
}

func setupError(runtime string, err error) *sandbox.Result {
	return &sandbox.Result{Reason: sandbox.ReasonSetupError, ExitCode: -1, Error: err.Error(), Runtime: runtime}
}

func mergeEnv(base, extra map[string]string) map[string]string {
	out := maps.Clone(base)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, extra)
	return out
}

// quote quotes s for the shell.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = quote(a)
	}
	return strings.Join(q, " ")
}
