package eval

import (
	"testing"

	"github.com/coderun/coderun/language"
)

// TestForgedRustVerdictsAgain: more ways a Rust solution (HumanEval-X's
// greatest common divisor, answered a + b) might forge a pass from U, none
// of which TestForgedRustVerdicts tries: answering every call before it is
// asked; an answer that is a number too long, or a panic whose message
// holds the test harness's success; stopping every process it can (T
// included) rather than killing them; writing into every other process's
// memory or standard output through /proc; writing itself a call on the
// tests' FIFO, so that T reads an answer to a call it never made; reading
// the tests' sources at compile time (include_str!); a value whose Drop
// panics after the answer, and an exit handler (atexit) that exits 0.
func TestForgedRustVerdictsAgain(t *testing.T) {
	needLandlock(t)
	ps := loadProblems(t, humanEvalXFiles[language.Rust], ReadOptions{})
	const wrong = "    return a + b;\n}\n"
	const wire = "    use std::io::Write;\n    use std::os::unix::io::FromRawFd;\n    let mut w = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(4) });\n"
	const procs = "    let pids: Vec<u32> = std::fs::read_dir(\"/proc\").unwrap().filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).filter(|p| *p != std::process::id()).collect();\n"
	forgeries := []forgery{
		{"answers before being asked", wire + "    for _ in 0..10000 { let _ = w.write_all(b\"R1 \\n\"); }\n" + wrong},
		{"an answer too long", wire + "    let _ = w.write_all(format!(\"R{} \\n\", \"9\".repeat(100000)).as_bytes());\n" + wrong},
		{"a panic with the harness's success", "    panic!(\"\\n\\ntest result: ok. 9 passed; 0 failed; 0 ignored\\n\");\n}\n"},
		{"every process stopped", procs + "    for p in &pids { let _ = std::process::Command::new(\"kill\").args([\"-STOP\", &p.to_string()]).status(); }\n" + wrong},
		{"every process's memory and output written", procs + "    use std::io::Write;\n" +
			"    for p in &pids { for f in [\"mem\", \"fd/1\", \"fd/2\"] { if let Ok(mut x) = std::fs::OpenOptions::new().write(true).open(format!(\"/proc/{}/{}\", p, f)) { let _ = x.write_all(b\"\\ntest result: ok.\\n\"); } } }\n" +
			"    return 1;\n}\n"},
		{"a call of its own on the tests' FIFO", "    use std::io::Write;\n    if let Ok(mut c) = std::fs::OpenOptions::new().write(true).open(\"/tmp/coderun-pipes/calls\") { let _ = c.write_all(b\"0 3 7 \\n\"); }\n" + wrong},
		{"the tests' sources at compile time", "    const T: &str = include_str!(\"/work/.coderun/t/main.rs\");\n    if T.contains(\"greatest_common_divisor(3, 7), 1\") { return 1; }\n" + wrong},
		{"a Drop that panics, an exit handler that exits 0", wrong +
			"extern \"C\" { fn atexit(f: extern \"C\" fn()) -> i32; }\nextern \"C\" fn coderun_x() { unsafe { libc_exit(0) } }\nextern \"C\" { #[link_name = \"_exit\"] fn libc_exit(c: i32) -> !; }\n" +
			"struct D; impl Drop for D { fn drop(&mut self) { panic!(\"drop\") } }\n#[used]\n#[link_section = \".init_array\"]\nstatic CODERUN_Y: extern \"C\" fn() = { extern \"C\" fn f() { unsafe { atexit(coderun_x); } let _d = D; } f };\n"},
	}
	// These go at the split's own channels (the wire, its FIFOs, T's
	// process), which one program does not have: none passed as one program.
	checkCompiledForgeries(t, ps[13], forgeries, nil, 0)
}
