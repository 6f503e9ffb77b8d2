// Package toolchain runs the languages a runtime does not start itself
// (every language of package language but Python, Bash and Node): C, C++,
// Go, Java, Rust, TypeScript, Ruby, PHP, Perl, Lua, R.
//
// [Wrap] puts it in front of a runtime. A request in a native language
// goes to the runtime as it is; any other runs in one of the runtime's
// long-lived sandboxes (sandbox.Interactive) as the commands its
// language.Spec declares: the source is written to the build directory of
// the workspace (BuildDir); an interpreted language runs as one run of the
// runtime (a Bash program starting the interpreter: any runtime will do).
//
// A compiled language has two steps, each with its own limits and its own
// result (Result.Compile): the compile step under Request.CompileLimits,
// then, only if it made a program, the run step under Request.Limits, in
// the same sandbox. A compile step that fails ends the run with
// sandbox.ReasonCompileError and the compiler's diagnostics. The two steps
// are one program of the sandbox (together.go: a driver that runs the
// compiler, reports its end on both streams, then execs the program; the
// host splits the output and bounds each step's time and output, the driver
// sets each step's rlimits), since a program start costs a sandbox's set-up
// and teardown, as much as a small compile. The sandbox's memory limit is
// then the run step's: when the compile step may use less than the run step
// (a request's choice), or was stopped by the run step's smaller limit, the
// steps run as two programs (separate). Either way the usage of each step is
// its own but for peak memory: with one program it is the sandbox's peak
// over both steps, reported in each.
//
// Toolchains keep their caches and scratch (GOCACHE, HOME, TMPDIR) in the
// build directory (CacheDir), never on the host.
//
// A language whose toolchain is not installed is refused before anything
// runs, with an error wrapping sandbox.ErrUnavailable that names what is
// missing and the Debian packages that provide it.
package toolchain

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/coderun/coderun/language"
	"github.com/coderun/coderun/sandbox"
)

// BuildDir is where, in the workspace, a program's source, its build and
// its toolchain's caches are kept. It is left out of the files a run
// reports, and a request may not place files in it.
const BuildDir = ".coderun"

// CacheDir is where in the sandbox toolchains keep their caches and
// scratch (GOCACHE, HOME, TMPDIR): in the build directory, which is the
// sandbox's own and not among the files a run reports, and which the host
// makes with the source (no mkdir to run in the sandbox first).
const CacheDir = sandbox.WorkDir + "/" + BuildDir + "/cache"

// Options configure Wrap.
type Options struct {
	// Root is where toolchains are looked for: the sandbox's root file
	// system as the host sees it ("" means "/").
	Root string
	// Pool is how many sandboxes to keep ready for compiled languages,
	// their driver started (see pool.go): a run with no environment of
	// its own, the default memory and workspace, and other limits within
	// the defaults (SandboxFusion's time limits, say) takes one and does
	// not wait for a sandbox's set-up; the pool makes its replacement once
	// that run has ended. Zero: none. It needs a runtime that keeps
	// sandboxes (sandbox.Interactive).
	Pool int
}

// Runtime runs every language: native ones by the runtime it wraps,
// the others through their toolchains in the runtime's sandboxes.
type Runtime struct {
	inner sandbox.Runtime
	root  string
	pool  *pool // nil: no pool
}

// interactiveRuntime is a Runtime whose wrapped runtime keeps sandboxes
// alive; it passes them on. Compiled languages need it.
type interactiveRuntime struct {
	*Runtime
	sandbox.Interactive
}

// Wrap returns rt able to run every language. When rt implements
// sandbox.Interactive, so does the result (its sandboxes are rt's).
func Wrap(rt sandbox.Runtime, opts Options) sandbox.Runtime {
	root := opts.Root
	if root == "" {
		root = "/"
	}
	w := &Runtime{inner: rt, root: root}
	if irt, ok := rt.(sandbox.Interactive); ok {
		if opts.Pool > 0 {
			w.pool = newPool(irt, opts.Pool)
		}
		return &interactiveRuntime{Runtime: w, Interactive: irt}
	}
	return w
}

// Unwrap returns the runtime Wrap was given.
func (r *Runtime) Unwrap() sandbox.Runtime { return r.inner }

// Name is the wrapped runtime's name.
func (r *Runtime) Name() string { return r.inner.Name() }

// Close closes the pool's sandboxes, then the wrapped runtime.
func (r *Runtime) Close() error {
	if r.pool != nil {
		r.pool.close()
	}
	return r.inner.Close()
}

// PoolReady reports how many sandboxes the pool holds ready (Options.Pool).
func (r *Runtime) PoolReady() int {
	if r.pool == nil {
		return 0
	}
	return len(r.pool.ready)
}

// Run runs req: a native language on the wrapped runtime, any other
// through its toolchain (see the package documentation).
func (r *Runtime) Run(ctx context.Context, req sandbox.Request) (*sandbox.Result, error) {
	spec, ok := language.Lookup(req.Language)
	if !ok || spec.Native {
		return r.inner.Run(ctx, req)
	}
	tool, err := Find(r.root, spec)
	if err != nil {
		return nil, err
	}
	return r.run(ctx, spec, tool, req)
}

// Find returns the toolchain binary of spec under root ("" or "/": the
// host's), or an error wrapping sandbox.ErrUnavailable (and
// sandbox.ErrInvalid) that says what is missing and which Debian packages
// provide it.
func Find(root string, spec *language.Spec) (string, error) {
	if root == "" {
		root = "/"
	}
	tool := ""
	for _, t := range spec.Tool {
		if executable(filepath.Join(root, t)) {
			tool = t
			break
		}
	}
	var missing []string
	if tool == "" {
		missing = append(missing, strings.Join(spec.Tool, " or "))
	}
	for _, n := range spec.Needs {
		if _, err := os.Stat(filepath.Join(root, n)); err != nil {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("%w: %w: %s is not installed (%s missing; Debian packages: %s)", sandbox.ErrInvalid, sandbox.ErrUnavailable,
			spec.Title, strings.Join(missing, ", "), strings.Join(spec.Packages, " "))
	}
	return tool, nil
}

func executable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// Validate checks req as Run would before running anything, whatever its
// language (the toolchain's presence is not checked: see Find). It fills
// in no limits.
func Validate(req *sandbox.Request) error {
	spec, ok := language.Lookup(req.Language)
	if !ok || spec.Native {
		probe := *req
		_, err := probe.Validate(sandbox.DefaultLimits)
		return err
	}
	return validate(req, spec)
}

// validate checks what a toolchain request adds to a runtime's checks,
// and those checks themselves (as the request of a Bash program).
func validate(req *sandbox.Request, spec *language.Spec) error {
	probe := *req
	probe.Language, probe.CompileArgs = sandbox.Bash, nil
	if _, err := probe.Validate(sandbox.DefaultLimits); err != nil {
		return err
	}
	if req.Name != "" && !strings.Contains(req.Name, ".") {
		return fmt.Errorf("%w: name %q has no extension (a %s file is named like %s)", sandbox.ErrInvalid, req.Name, spec.Title, spec.File)
	}
	for _, f := range req.Files {
		if p, err := sandbox.CleanPath(f.Path); err == nil && (p == BuildDir || strings.HasPrefix(p, BuildDir+"/")) {
			return fmt.Errorf("%w: file %q: %s/ is the build directory", sandbox.ErrInvalid, f.Path, BuildDir)
		}
	}
	if len(req.CompileArgs) > 0 && !spec.Compiled() {
		return fmt.Errorf("%w: %s has no compile step to take compile arguments", sandbox.ErrInvalid, spec.Title)
	}
	if len(req.CompileArgs) > maxCompileArgs {
		return fmt.Errorf("%w: %d compile arguments, more than %d", sandbox.ErrInvalid, len(req.CompileArgs), maxCompileArgs)
	}
	for _, a := range req.CompileArgs {
		if a == "" || strings.IndexByte(a, 0) >= 0 || len(a) > 4096 {
			return fmt.Errorf("%w: compile argument %q: empty, too long or with a NUL byte", sandbox.ErrInvalid, a)
		}
	}
	lim := req.CompileLimits.WithDefaults(sandbox.DefaultCompileLimits)
	if err := lim.Validate(); err != nil {
		return fmt.Errorf("compile limits: %w", err)
	}
	return nil
}

const maxCompileArgs = 64

var errNoProgram = errors.New("no program")
