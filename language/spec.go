package language

import (
	"fmt"
	"maps"
	"regexp"
	"strings"
	"sync"
)

// Spec declares one language: how people name it, how its files are
// named, which toolchain runs it and how. A runtime starts the Native
// languages' interpreters itself; every other language runs as the
// commands declared here, in the sandbox, its compile step (if any) and its
// run step each a program of their own (see sandbox/toolchain).
//
// Commands are argument lists whose words may hold placeholders:
// {tool} the toolchain's binary (the first of Tool that exists), {dir} the
// build directory, {src} the source file in it ({file} its name, for
// compile commands, which run in the build directory), {cache} the directory of
// the toolchain's caches and scratch, {bin} the program a
// compile step makes, {class} Java's main class; a word that is exactly
// {args} stands for the extra compile arguments a request gives (none,
// one or more words).
type Spec struct {
	Name  Language
	Title string // for people: "C++"
	// Aliases are other names Parse accepts (lower case).
	Aliases []string
	// Extensions are the file extensions (lower case, with the dot).
	Extensions []string
	// Interpreters are the program names a #! line runs it with.
	Interpreters []string
	// File is the source file's name when the request names none.
	File string
	// Tool lists where the toolchain's binary may be, most preferred
	// first; the first that exists is {tool}. Needs lists other files the
	// toolchain cannot work without.
	Tool  []string
	Needs []string
	// Packages are the Debian packages that install the toolchain.
	Packages []string
	// Native languages are run by the runtime's own bootstrap (Python,
	// Bash, Node): Compile and Run are empty.
	Native bool
	// Compile makes the program (nil: the language is interpreted); Run
	// runs it.
	Compile []string
	Run     []string
	// Version prints the toolchain's version (its first line is kept).
	Version []string
	// Env is set for the compile and the run steps: it keeps the
	// toolchain's caches and scratch in the build directory.
	Env map[string]string
	// Extras are settings that apply when a file exists that setup may
	// have made: libraries, shared read-only caches.
	Extras []Extra
	// SandboxFusion lists the names SandboxFusion's /run_code gives the
	// language; the first is the one it answers with.
	SandboxFusion []string
	// adapt adjusts a build to the code (Java's class, Go's and Rust's
	// test modes).
	adapt func(b *Build, code string)
}

// Extra is what a toolchain gains where Path exists (on the sandbox's
// root): compile arguments (given before the request's) and environment
// (over the Spec's Env), such as Rust's prebuilt crates or Go's prebuilt
// build cache.
type Extra struct {
	Path string
	Args []string
	Env  map[string]string
}

// Compiled reports whether the language has a compile step.
func (s *Spec) Compiled() bool { return len(s.Compile) > 0 }

// Build is how one program in a language is compiled and run: the
// commands of its Spec with the placeholders filled in.
type Build struct {
	// File is the source file's name in the build directory.
	File string
	// Compile is the compile command (nil: none); Run the run command.
	Compile []string
	Run     []string
	// Env is the environment both commands get.
	Env map[string]string
	// Mode names a variant the code asked for: "test" for Go and Rust
	// test code, "" otherwise.
	Mode string
	// Class is Java's main class.
	Class string
}

// Plan fills in the commands of a program: tool is the toolchain's binary,
// dir the build directory and cache the directory for caches and scratch
// (absolute paths in the sandbox), name the
// source file's name ("" for the Spec's File), code the program and args
// the extra compile arguments; exists says whether an Extra's path exists.
// Native languages have no plan.
func (s *Spec) Plan(tool, dir, cache, name, code string, args []string, exists func(path string) bool) (*Build, error) {
	if s.Native {
		return nil, fmt.Errorf("language: %s is run by the runtime itself", s.Name)
	}
	if len(args) > 0 && !s.Compiled() {
		return nil, fmt.Errorf("language: %s has no compile step to give arguments to", s.Name)
	}
	b := &Build{File: s.File}
	if name != "" {
		b.File = name
	}
	if s.adapt != nil {
		s.adapt(b, code)
	}
	if b.Compile == nil {
		b.Compile = s.Compile
	}
	if b.Run == nil {
		b.Run = s.Run
	}
	vars := map[string]string{
		"{tool}": tool, "{dir}": dir, "{cache}": cache, "{src}": dir + "/" + b.File, "{file}": b.File, "{bin}": dir + "/main", "{class}": b.Class,
	}
	var all []string
	env := maps.Clone(s.Env)
	for _, e := range s.Extras {
		if exists != nil && exists(e.Path) {
			all = append(all, e.Args...)
			if env == nil {
				env = map[string]string{}
			}
			maps.Copy(env, e.Env)
		}
	}
	b.Compile = expand(b.Compile, vars, append(all, args...))
	b.Run = expand(b.Run, vars, nil)
	b.Env = map[string]string{}
	for k, v := range env {
		b.Env[k] = expandWord(v, vars)
	}
	return b, nil
}

func expand(words []string, vars map[string]string, args []string) []string {
	if words == nil {
		return nil
	}
	out := make([]string, 0, len(words)+len(args))
	for _, w := range words {
		if w == "{args}" {
			out = append(out, args...)
			continue
		}
		out = append(out, expandWord(w, vars))
	}
	return out
}

func expandWord(w string, vars map[string]string) string {
	for k, v := range vars {
		w = strings.ReplaceAll(w, k, v)
	}
	return w
}

// VersionCommand is the version probe with {tool} filled in.
func (s *Spec) VersionCommand(tool string) []string {
	return expand(s.Version, map[string]string{"{tool}": tool}, nil)
}

// FromSandboxFusion returns the language SandboxFusion's name (such as
// "cpp", "nodejs", "go_test", "R") stands for.
func FromSandboxFusion(name string) (Language, bool) {
	for i := range specs {
		for _, n := range specs[i].SandboxFusion {
			if n == name {
				return specs[i].Name, true
			}
		}
	}
	return "", false
}

// javaPublicClass finds the public top-level class of a Java file.
var javaPublicClass = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?m)^\s*public\s+(?:(?:final|abstract|static|strictfp|sealed|non-sealed)\s+)*(?:class|record|enum|interface)\s+([A-Za-z_$][A-Za-z0-9_$]*)`)
})

// adaptJava names the source file after its public class (javac wants
// them to match), or the class after the file when a name was given;
// Main without either.
func adaptJava(b *Build, code string) {
	if b.File != "Main.java" && strings.HasSuffix(b.File, ".java") {
		b.Class = strings.TrimSuffix(b.File, ".java")
		return
	}
	b.Class = "Main"
	if m := javaPublicClass().FindStringSubmatch(code); m != nil {
		b.Class = m[1]
	}
	b.File = b.Class + ".java"
}

// goTestFunc finds a Go test function.
var goTestFunc = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^func\s+(Test|Benchmark|Fuzz|Example)\w*\s*\(`) })

// adaptGo builds code with test functions and an import of "testing" as a
// test binary (go test -c), which runs its tests, in a _test.go file.
func adaptGo(b *Build, code string) {
	if !goTestFunc().MatchString(code) || !strings.Contains(code, `"testing"`) {
		return
	}
	b.Mode = "test"
	if !strings.HasSuffix(b.File, "_test.go") {
		b.File = strings.TrimSuffix(b.File, ".go") + "_test.go"
	}
	b.Compile = []string{"{tool}", "test", "-c", "-o", "{bin}", "-ldflags=-s -w", "{args}", "{file}"}
	b.Run = []string{"{bin}", "-test.v"}
}

// adaptRust builds code with #[test] functions with rustc's test harness,
// which runs them instead of main.
func adaptRust(b *Build, code string) {
	if !strings.Contains(code, "#[test]") {
		return
	}
	b.Mode = "test"
	b.Compile = []string{"{tool}", "--test", "--edition", "2021", "-C", "opt-level=1", "-o", "{bin}", "{args}", "{file}"}
}
