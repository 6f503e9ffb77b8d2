package language

import (
	"slices"
	"testing"
)

func TestParseAcceptsNamesAndAliases(t *testing.T) {
	for name, want := range map[string]Language{
		"python": Python, "py": Python, "Python3": Python, "py3": Python, "ipython": Python, " PY ": Python,
		"bash": Bash, "sh": Bash, "shell": Bash, "SH": Bash,
		"node": Node, "nodejs": Node, "javascript": Node, "js": Node, "mjs": Node,
		"c": C, "C++": CPP, "cpp": CPP, "golang": Go, "Java": Java, "rs": Rust, "ts": TypeScript,
		"ruby": Ruby, "php": PHP, "perl": Perl, "lua": Lua, "R": R, "rscript": R,
	} {
		if got, ok := Parse(name); !ok || got != want {
			t.Errorf("Parse(%q) = %q, %v; want %q", name, got, ok, want)
		}
	}
	for _, name := range []string{"", "json", "text", "zsh", "pythonx", "cc", "c#", "kotlin"} {
		if got, ok := Parse(name); ok {
			t.Errorf("Parse(%q) = %q, true; want not a language", name, got)
		}
	}
}

func TestEveryLanguageParsesToItself(t *testing.T) {
	want := []Language{Python, Bash, Node, C, CPP, Go, Java, Rust, TypeScript, Ruby, PHP, Perl, Lua, R}
	if got := All(); !slices.Equal(got, want) {
		t.Fatalf("All() = %q", got)
	}
	if got := Names(); len(got) != len(want) || got[0] != "python" || got[3] != "c" {
		t.Fatalf("Names() = %q", got)
	}
	for _, l := range All() {
		if got, ok := Parse(string(l)); !ok || got != l {
			t.Errorf("Parse(%q) = %q, %v", l, got, ok)
		}
		if !l.Known() {
			t.Errorf("%q is not Known", l)
		}
		if len(Extensions(l)) == 0 {
			t.Errorf("%q has no file extension", l)
		}
	}
	for _, l := range []Language{"", "shell", "py", "c++", "kotlin"} {
		if l.Known() {
			t.Errorf("%q is Known; only canonical names are", l)
		}
	}
}

func TestExtensions(t *testing.T) {
	for l, want := range map[Language][]string{
		Python:   {".py", ".pyw"},
		Bash:     {".bash", ".sh"},
		Node:     {".cjs", ".js", ".mjs"},
		Ruby:     {".rb"},
		CPP:      {".c++", ".cc", ".cpp", ".cxx", ".hpp"},
		"kotlin": nil,
	} {
		if got := Extensions(l); !slices.Equal(got, want) {
			t.Errorf("Extensions(%q) = %q, want %q", l, got, want)
		}
	}
}

func TestOfFile(t *testing.T) {
	for _, c := range []struct {
		path, code string
		want       Language
		ok         bool
	}{
		{"main.py", "", Python, true},
		{"dir.d/GUI.PYW", "", Python, true},
		{"run.sh", "print(1)", Bash, true}, // the extension wins over the content
		{"x.Bash", "", Bash, true},
		{"app.js", "", Node, true},
		{"app.cjs", "", Node, true},
		{"app.MJS", "", Node, true},
		{"notes.txt", "", "", false},
		{"prog.rb", "#!/usr/bin/env python3", Ruby, true},
		{"prog.kt", "", "", false},
		{"main.C", "", C, true},
		{"analysis.R", "", R, true},
		{"Main.java", "", Java, true},
		{"x.ts", "", TypeScript, true},
		{"script", "#!/usr/bin/env -S ruby -w", Ruby, true},
		{"script", "#!/usr/bin/perl", Perl, true},
		{"script", "#!/usr/bin/env bash\necho hi", Bash, true},
		{"script", "#!/bin/sh", Bash, true},
		{"script", "#! /usr/bin/node\n", Node, true},
		{"script", "#!/usr/bin/env nodejs", Node, true},
		{"script", "#!/usr/bin/env ruby", Ruby, true},
		{"script", "#!/usr/bin/env zsh", Python, true},
		{"script", "#!", Python, true},
		{"script", "print(1)\n#!/bin/bash", Python, true},
		{"-", "", Python, true},
	} {
		got, ok := OfFile(c.path, c.code)
		if got != c.want || ok != c.ok {
			t.Errorf("OfFile(%q, %q) = %q, %v; want %q, %v", c.path, c.code, got, ok, c.want, c.ok)
		}
	}
}

func TestFenceTag(t *testing.T) {
	for info, want := range map[string]string{
		"python": "python", "{.python}": "python", "python title=x": "python",
		"python:main.py": "python", "": "", "c++": "c++", "objective-c x": "objective-c",
		"py3 {linenos}": "py3",
	} {
		if got := FenceTag(info); got != want {
			t.Errorf("FenceTag(%q) = %q, want %q", info, got, want)
		}
	}
}
