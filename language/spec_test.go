package language

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// placeholder matches the words of a command template that are filled in.
var placeholder = regexp.MustCompile(`\{[a-z]+\}`)

var knownPlaceholders = []string{"{tool}", "{dir}", "{cache}", "{src}", "{file}", "{bin}", "{class}", "{args}"}

// TestTableIsConsistent holds every declaration to what the runtime
// relies on: one owner per name and extension, a source file with one of
// its extensions, a toolchain with packages and a version probe, and
// commands that use only known placeholders.
func TestTableIsConsistent(t *testing.T) {
	owner := map[string]Language{}
	claim := func(l Language, what, name string) {
		if o, dup := owner[what+" "+name]; dup {
			t.Errorf("%s %q belongs to %s and %s", what, name, o, l)
		}
		owner[what+" "+name] = l
	}
	for _, s := range specs {
		claim(s.Name, "name", string(s.Name))
		for _, a := range s.Aliases {
			if a != strings.ToLower(a) {
				t.Errorf("%s: alias %q is not lower case", s.Name, a)
			}
			claim(s.Name, "name", a)
		}
		for _, e := range s.Extensions {
			if !strings.HasPrefix(e, ".") || e != strings.ToLower(e) {
				t.Errorf("%s: extension %q", s.Name, e)
			}
			claim(s.Name, "extension", e)
		}
		for _, n := range s.SandboxFusion {
			claim(s.Name, "SandboxFusion name", n)
		}
		if !slices.ContainsFunc(s.Extensions, func(e string) bool { return strings.HasSuffix(strings.ToLower(s.File), e) }) {
			t.Errorf("%s: file %q has none of its extensions %q", s.Name, s.File, s.Extensions)
		}
		if s.Title == "" || len(s.Tool) == 0 || len(s.Packages) == 0 || len(s.Version) == 0 {
			t.Errorf("%s: title, tool, packages and version probe are all needed", s.Name)
		}
		for _, p := range append(slices.Clone(s.Tool), s.Needs...) {
			if !strings.HasPrefix(p, "/") {
				t.Errorf("%s: %q is not an absolute path", s.Name, p)
			}
		}
		if s.Native != (len(s.Run) == 0) {
			t.Errorf("%s: native %v with run command %q", s.Name, s.Native, s.Run)
		}
		for _, cmd := range [][]string{s.Compile, s.Run, s.Version} {
			for _, w := range cmd {
				for _, p := range placeholder.FindAllString(w, -1) {
					if !slices.Contains(knownPlaceholders, p) {
						t.Errorf("%s: unknown placeholder %s in %q", s.Name, p, cmd)
					}
				}
			}
		}
	}
}

func TestPlanFillsInTheCommands(t *testing.T) {
	c, _ := Lookup(C)
	b, err := c.Plan("/usr/bin/gcc", "/work/.b", "/tmp/c", "", "int main(){}", []string{"-DX=1", "-lcrypto"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b.File != "main.c" || !slices.Equal(b.Compile, []string{"/usr/bin/gcc", "-std=gnu17", "-O2", "-o", "/work/.b/main", "main.c", "-DX=1", "-lcrypto", "-lm"}) ||
		!slices.Equal(b.Run, []string{"/work/.b/main"}) || b.Env["TMPDIR"] != "/tmp/c/tmp" {
		t.Errorf("C plan = %+v", b)
	}
	rb, _ := Lookup(Ruby)
	b, err = rb.Plan("/usr/bin/ruby", "/w", "/c", "tool.rb", "puts 1", nil, nil)
	if err != nil || b.Compile != nil || !slices.Equal(b.Run, []string{"/usr/bin/ruby", "/w/tool.rb"}) {
		t.Errorf("Ruby plan = %+v, %v", b, err)
	}
	if _, err := rb.Plan("/usr/bin/ruby", "/w", "/c", "", "puts 1", []string{"-O2"}, nil); err == nil {
		t.Error("an interpreter took compile arguments")
	}
	py, _ := Lookup(Python)
	if _, err := py.Plan("/usr/bin/python3", "/w", "/c", "", "print(1)", nil, nil); err == nil {
		t.Error("a native language got a plan")
	}
}

func TestJavaIsNamedAfterItsPublicClass(t *testing.T) {
	j, _ := Lookup(Java)
	for _, c := range []struct{ name, code, file, class string }{
		{"", "class Solution {}\npublic class Main { public static void main(String[] a) {} }", "Main.java", "Main"},
		{"", "import java.util.*;\npublic final class Hello {\n}", "Hello.java", "Hello"},
		{"", "class Only { public static void main(String[] a) {} }", "Main.java", "Main"},
		{"Tool.java", "class Tool {}", "Tool.java", "Tool"},
	} {
		b, err := j.Plan("/usr/bin/javac", "/w", "/c", c.name, c.code, nil, nil)
		if err != nil || b.File != c.file || b.Class != c.class || b.Run[len(b.Run)-1] != c.class {
			t.Errorf("Java plan of %q (name %q) = %+v, %v; want file %s, class %s", c.code, c.name, b, err, c.file, c.class)
		}
	}
}

func TestExtrasApplyWhereTheirFileExists(t *testing.T) {
	r, _ := Lookup(Rust)
	exists := func(p string) bool { return p == RustCrates }
	b, _ := r.Plan("/usr/bin/rustc", "/w", "/c", "", "fn main() {}", []string{"-g"}, exists)
	want := []string{"-L", RustCrates, "--extern", "rand", "--extern", "regex", "--extern", "md5", "-g"}
	if i := slices.Index(b.Compile, "-L"); i < 0 || !slices.Equal(b.Compile[i:i+len(want)], want) {
		t.Errorf("Rust with its crates: %q", b.Compile)
	}
	b, _ = r.Plan("/usr/bin/rustc", "/w", "/c", "", "fn main() {}", nil, func(string) bool { return false })
	if slices.Contains(b.Compile, "--extern") {
		t.Errorf("Rust without its crates: %q", b.Compile)
	}
	g, _ := Lookup(Go)
	b, _ = g.Plan("/usr/local/go/bin/go", "/w", "/c", "", "package main\nfunc main() {}\n", nil, func(p string) bool { return p == GoCache })
	if b.Env["GOCACHE"] != GoCache {
		t.Errorf("Go with the shared cache: GOCACHE=%q", b.Env["GOCACHE"])
	}
	b, _ = g.Plan("/usr/local/go/bin/go", "/w", "/c", "", "package main\nfunc main() {}\n", nil, nil)
	if b.Env["GOCACHE"] != "/c/go" {
		t.Errorf("Go without the shared cache: GOCACHE=%q", b.Env["GOCACHE"])
	}
}

func TestTestModes(t *testing.T) {
	g, _ := Lookup(Go)
	b, _ := g.Plan("/usr/local/go/bin/go", "/w", "/c", "", "package main\nimport \"testing\"\nfunc TestX(t *testing.T) {}\n", nil, nil)
	if b.Mode != "test" || b.File != "main_test.go" || !slices.Equal(b.Compile[:3], []string{"/usr/local/go/bin/go", "test", "-c"}) {
		t.Errorf("Go test plan = %+v", b)
	}
	b, _ = g.Plan("/usr/local/go/bin/go", "/w", "/c", "", "package main\nfunc main() {}\n// func TestX is not a test\n", nil, nil)
	if b.Mode != "" || b.File != "main.go" {
		t.Errorf("Go plan = %+v", b)
	}
	r, _ := Lookup(Rust)
	b, _ = r.Plan("/usr/bin/rustc", "/w", "/c", "", "fn main(){}\n#[cfg(test)]\nmod tests { #[test] fn t() {} }", []string{"-L", "/x"}, nil)
	if b.Mode != "test" || !slices.Contains(b.Compile, "--test") || !slices.Contains(b.Compile, "/x") {
		t.Errorf("Rust test plan = %+v", b)
	}
}

func TestFromSandboxFusion(t *testing.T) {
	for name, want := range map[string]Language{"cpp": CPP, "nodejs": Node, "go_test": Go, "R": R, "typescript": TypeScript, "python": Python} {
		if got, ok := FromSandboxFusion(name); !ok || got != want {
			t.Errorf("FromSandboxFusion(%q) = %q, %v; want %q", name, got, ok, want)
		}
	}
	if _, ok := FromSandboxFusion("cobol"); ok {
		t.Error("cobol is a SandboxFusion language")
	}
}
