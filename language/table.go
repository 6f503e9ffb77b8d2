package language

// specs is the table of languages: adding a language is adding an entry
// (and its tests). Python, Bash and Node come first and are Native.
//
// Toolchains write their caches and scratch under the cache directory
// ({cache}, in the sandbox's workspace), never in the host's.
// Where scripts/toolchain-caches.sh (run by scripts/setup.sh) puts what it
// builds for the toolchains, under /usr so that sandboxes see it
// read-only.
const (
	// RustCrates holds rlibs of the crates HumanEval-X's Rust uses (rand
	// 0.8, regex, md5), built from Debian's crate sources.
	RustCrates = "/usr/local/lib/coderun/rust"
	// GoCache is a Go build cache of the standard library and testify,
	// which Go reads without writing to it.
	GoCache = "/usr/local/lib/coderun/go-cache"
	// NodeModules holds the node modules eval's harness resolves for
	// JavaScript items: js-md5, which HumanEval-X's JavaScript/162
	// requires (its reference environment, CodeGeeX's, installs it).
	NodeModules = "/usr/local/lib/coderun/node/node_modules"
)

var specs = []Spec{
	{
		Name: Python, Title: "Python", Native: true,
		Aliases:      []string{"py", "python3", "py3", "ipython"},
		Extensions:   []string{".py", ".pyw"},
		Interpreters: []string{"python", "python3"},
		File:         "main.py", Tool: []string{"/usr/bin/python3"}, Packages: []string{"python3"},
		Version:       []string{"{tool}", "--version"},
		SandboxFusion: []string{"python", "pytest"},
	},
	{
		Name: Bash, Title: "Bash", Native: true,
		Aliases:      []string{"sh", "shell"},
		Extensions:   []string{".sh", ".bash"},
		Interpreters: []string{"bash", "sh"},
		File:         "main.sh", Tool: []string{"/usr/bin/bash"}, Packages: []string{"bash"},
		Version:       []string{"{tool}", "-c", "echo $BASH_VERSION"},
		SandboxFusion: []string{"bash"},
	},
	{
		Name: Node, Title: "JavaScript (Node.js)", Native: true,
		Aliases:      []string{"nodejs", "javascript", "js", "mjs"},
		Extensions:   []string{".js", ".cjs", ".mjs"},
		Interpreters: []string{"node", "nodejs"},
		File:         "main.js", Tool: []string{"/usr/bin/node"}, Packages: []string{"nodejs"},
		Version:       []string{"{tool}", "--version"},
		SandboxFusion: []string{"nodejs"},
	},
	{
		Name: C, Title: "C", Aliases: []string{"gcc"},
		Extensions: []string{".c"},
		File:       "main.c", Tool: []string{"/usr/bin/gcc"}, Packages: []string{"gcc", "libc6-dev"},
		Compile: []string{"{tool}", "-std=gnu17", "-O2", "-o", "{bin}", "{file}", "{args}", "-lm"},
		Run:     []string{"{bin}"},
		Version: []string{"{tool}", "--version"},
		Env:     map[string]string{"TMPDIR": "{cache}/tmp"},
	},
	{
		Name: CPP, Title: "C++", Aliases: []string{"c++", "cxx", "g++"},
		Extensions: []string{".cpp", ".cc", ".cxx", ".c++", ".hpp"},
		File:       "main.cpp", Tool: []string{"/usr/bin/g++"}, Packages: []string{"g++"},
		// The standard is C++17 unless the compile arguments name
		// another (-std=c++20): g++ takes the last -std.
		Compile:       []string{"{tool}", "-std=c++17", "-O2", "-o", "{bin}", "{file}", "{args}", "-lm"},
		Run:           []string{"{bin}"},
		Version:       []string{"{tool}", "--version"},
		Env:           map[string]string{"TMPDIR": "{cache}/tmp"},
		SandboxFusion: []string{"cpp"},
	},
	{
		Name: Go, Title: "Go", Aliases: []string{"golang"},
		Extensions: []string{".go"},
		File:       "main.go",
		// The Go distribution a machine has in /usr/local/go, else Debian's.
		Tool:     []string{"/usr/local/go/bin/go", "/usr/lib/go/bin/go"},
		Packages: []string{"golang-go", "golang-github-stretchr-testify-dev"},
		// Linked without DWARF and the symbol table (-s -w): a quarter of
		// a hello world's build CPU (256 → 195 ms here), and nothing a
		// program run here uses (panics and runtime.Callers read the
		// pclntab, which stays). A request's own -ldflags wins (the last
		// one does).
		Compile: []string{"{tool}", "build", "-o", "{bin}", "-ldflags=-s -w", "{args}", "{file}"},
		Run:     []string{"{bin}"},
		Version: []string{"{tool}", "version"},
		// GOPATH mode, offline: imports resolve in Debian's Go packages
		// (testify among them); nothing is downloaded.
		Env: map[string]string{
			"GO111MODULE": "off", "GOPATH": "/usr/share/gocode", "GOCACHE": "{cache}/go",
			"GOTOOLCHAIN": "local", "GOPROXY": "off", "GOFLAGS": "", "CGO_ENABLED": "0",
			"HOME": "{cache}/home", "TMPDIR": "{cache}/tmp",
		},
		// A shared build cache, read-only: the standard library is not
		// compiled again for every program (Go tolerates a cache it cannot
		// write to).
		Extras:        []Extra{{Path: GoCache, Env: map[string]string{"GOCACHE": GoCache}}},
		SandboxFusion: []string{"go", "go_test"},
		adapt:         adaptGo,
	},
	{
		Name: Java, Title: "Java",
		Extensions: []string{".java"},
		File:       "Main.java",
		Tool:       []string{"/usr/lib/jvm/java-17-openjdk-amd64/bin/javac", "/usr/bin/javac"},
		Needs:      []string{"/usr/bin/java"},
		Packages:   []string{"openjdk-17-jdk-headless"},
		// A small compiler JVM: the C1 compiler and the serial collector
		// start faster than the defaults and fit the sandbox's memory.
		Compile: []string{"{tool}", "-J-XX:TieredStopAtLevel=1", "-J-XX:+UseSerialGC", "-J-Xshare:auto", "-encoding", "UTF-8", "-d", "{dir}/classes", "{args}", "{file}"},
		Run:     []string{"/usr/bin/java", "-XX:+UseSerialGC", "-Xshare:auto", "-cp", "{dir}/classes", "{class}"},
		Version: []string{"{tool}", "-version"},
		Env:     map[string]string{"HOME": "{cache}/home", "TMPDIR": "{cache}/tmp"},
		// The file is named after the public class: see adaptJava.
		SandboxFusion: []string{"java"},
		adapt:         adaptJava,
	},
	{
		Name: Rust, Title: "Rust", Aliases: []string{"rs"},
		Extensions: []string{".rs"},
		File:       "main.rs", Tool: []string{"/usr/bin/rustc"},
		Needs:    []string{"/usr/bin/cc"},
		Packages: []string{"rustc"},
		Compile:  []string{"{tool}", "--edition", "2021", "-C", "opt-level=1", "-o", "{bin}", "{args}", "{file}"},
		Run:      []string{"{bin}"},
		Version:  []string{"{tool}", "--version"},
		Env:      map[string]string{"HOME": "{cache}/home", "TMPDIR": "{cache}/tmp"},
		Extras:   []Extra{{Path: RustCrates, Args: []string{"-L", RustCrates, "--extern", "rand", "--extern", "regex", "--extern", "md5"}}},
		// Code with #[test] functions is built with the test harness.
		SandboxFusion: []string{"rust"},
		adapt:         adaptRust,
	},
	{
		// TypeScript is transpiled by esbuild (types are stripped, not
		// checked: as tsx and SandboxFusion run it) and run by Node.
		Name: TypeScript, Title: "TypeScript", Aliases: []string{"ts"},
		Extensions:   []string{".ts", ".cts", ".mts"},
		Interpreters: []string{"ts-node", "tsx"},
		File:         "main.ts", Tool: []string{"/usr/bin/esbuild"},
		Needs:    []string{"/usr/bin/node"},
		Packages: []string{"esbuild", "nodejs"},
		Compile:  []string{"{tool}", "{file}", "--outfile={dir}/main.js", "--format=cjs", "--platform=node", "--log-level=warning", "{args}"},
		Run:      []string{"/usr/bin/node", "{dir}/main.js"},
		Version:  []string{"{tool}", "--version"},
		Env:      map[string]string{"HOME": "{cache}/home", "TMPDIR": "{cache}/tmp"},
		// SandboxFusion's name for it.
		SandboxFusion: []string{"typescript"},
	},
	{
		Name: Ruby, Title: "Ruby", Aliases: []string{"rb"},
		Extensions: []string{".rb"}, Interpreters: []string{"ruby"},
		File: "main.rb", Tool: []string{"/usr/bin/ruby"}, Packages: []string{"ruby"},
		Run:           []string{"{tool}", "{src}"},
		Version:       []string{"{tool}", "--version"},
		SandboxFusion: []string{"ruby"},
	},
	{
		Name: PHP, Title: "PHP",
		Extensions: []string{".php"}, Interpreters: []string{"php"},
		File: "main.php", Tool: []string{"/usr/bin/php"}, Packages: []string{"php-cli"},
		Run:           []string{"{tool}", "{src}"},
		Version:       []string{"{tool}", "--version"},
		SandboxFusion: []string{"php"},
	},
	{
		Name: Perl, Title: "Perl", Aliases: []string{"pl"},
		Extensions: []string{".pl", ".pm"}, Interpreters: []string{"perl"},
		File: "main.pl", Tool: []string{"/usr/bin/perl"}, Packages: []string{"perl"},
		Run:           []string{"{tool}", "{src}"},
		Version:       []string{"{tool}", "-e", `print "perl $^V\n"`},
		SandboxFusion: []string{"perl"},
	},
	{
		Name: Lua, Title: "Lua",
		Extensions: []string{".lua"}, Interpreters: []string{"lua", "lua5.4"},
		File: "main.lua", Tool: []string{"/usr/bin/lua5.4"}, Packages: []string{"lua5.4"},
		Run:           []string{"{tool}", "{src}"},
		Version:       []string{"{tool}", "-v"},
		SandboxFusion: []string{"lua"},
	},
	{
		Name: R, Title: "R", Aliases: []string{"rscript"},
		Extensions: []string{".r"}, Interpreters: []string{"Rscript"},
		File: "main.R", Tool: []string{"/usr/bin/Rscript"}, Packages: []string{"r-base-core"},
		Run:           []string{"{tool}", "{src}"},
		Version:       []string{"{tool}", "--version"},
		Env:           map[string]string{"HOME": "{cache}/home", "TMPDIR": "{cache}/tmp"},
		SandboxFusion: []string{"R"},
	},
}
