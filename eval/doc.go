// Package eval scores programs against their tests in bulk, each in a fresh
// sandbox: the batch operation behind "coderun eval".
//
// The story of a run, in the order of this package's files:
//
//	jsonl.go    input files: JSON Lines, plain or gzip-compressed, read with
//	            line numbers so that every bad line can be reported (LineError)
//	problem.go  one benchmark problem in one of three shapes (HumanEval, MBPP,
//	            generic {id, code, test}), detected per line or forced; a
//	            problem turns a solution into the item to run (Problem.Item)
//	harness.go  the program of HumanEval, MBPP and generic Python items:
//	            harness.py, which runs the tests and the solution in two
//	            processes; harness_bash.go, harness.sh for generic bash items;
//	            harness_node.go, harness.js for generic node items
//	humanevalx.go  HumanEval-X's five languages; split.go runs an item
//	            of C++, Java, Go or Rust as two programs, the tests and
//	            the solution (split_cpp.go, split_java.go, split_go.go,
//	            split_rust.go build them; wire.hpp, wire.java, wire.go.txt,
//	            wire.rs carry the calls)
//	samples.go  a model's completions ({task_id, completion}, several per
//	            task), joined to their problems as the reference harness does
//	run.go      Run: items in, verdicts out as they complete, at a chosen
//	            concurrency, each item in its own sandbox.Runtime.Run
//	verdict.go  what a run's sandbox.Result means for the item: passed,
//	            failed (with the exception line and failing source line),
//	            timeout, memory or error
//	passk.go    the unbiased pass@k estimator
//	summary.go  Tally: counts, pass@k, latency percentiles and throughput
//	output.go   the verdict file: appended line by line, synced, and read
//	            back to resume an interrupted eval
//
// An item passes when its program exits with status 0 after running to its
// end. Run gives each run a fresh random marker on its standard input, and
// the program prints it only when its tests have all passed. A program that
// leaves early with exit(0), sys.exit(0), os._exit(0) or process.exit(0)
// (which the reference HumanEval harness counts as a failure) does not
// pass, and the marker is in none of the program's source, code objects,
// environment or files, so a solution cannot find it there and print it
// early to skip its tests; a line of the marker's shape is not the marker.
//
// # Verdicts a solution cannot forge
//
// HumanEval and MBPP items (harness.py, the program Problem.Item builds)
// keep the solution out of the process that judges it. The program is a
// harness that, before any of the solution's code exists in memory, makes
// itself non-dumpable (so that another process of the same user cannot
// open its /proc/<pid>/mem or fd) and forks. The child, U, replaces its
// standard input with /dev/null, runs the solution (HumanEval: prompt +
// completion; MBPP: the code, then test_setup_code, which builds the
// solution's objects), and then serves calls to it over a pair of pipes.
// The parent, T, reads the marker and the tests from its standard input
// only then (they are in no file and in none of U's memory: a solution
// cannot read the expected answers either), runs the tests with the
// solution's names standing for calls into U, kills U, and prints the
// marker if every test passed. U runs in a Landlock domain of its own,
// nested in the sandbox's, which on Linux 6.12 and later refuses it any
// signal to T (a solution that stopped T made the item run out its wall
// time). U may print anything, and where it can, kill T; either way T does
// not print the marker, and the item fails.
//
// Only plain data crosses from U to T, in a small tagged JSON encoding that
// T decodes by hand, building values of exact types: None, bool, int,
// float (inf, nan and -0.0 included), complex, str, bytes, list, tuple,
// dict, set, frozenset, collections' Counter, OrderedDict, defaultdict and
// deque, and builtin types by name. No pickle, marshal or eval of U's
// bytes, and no object of U's with methods of its own: an int subclass or
// an object equal to everything stays in U, and T holds a SolutionObject
// handle for it, which the tests may call and pass back to U (MBPP 601's
// Pair objects, functions the candidate returns) but which refuses to be
// compared, tested for truth, iterated, indexed or read, failing the item
// with an error that says so (a solution returning a generator where a
// list was expected fails that way).
//
// Which of the tests' names stand for the solution's: for HumanEval, the
// entry point only (check's candidate, and the entry point's name, which
// HumanEval/33's test calls); the prompt's other top-level code (the
// helpers that HumanEval/32, 38 and 50 test with) runs in T, trusted as the
// tests are, so a completion cannot redefine them. For MBPP, the names the
// problem's reference solution or its setup code define at top level
// (task 126 defines its own sum, task 596 imports sys; a module crosses as
// T's own copy of a standard one, by name), so a solution cannot shadow a
// builtin that the tests use, such as set or len; with no reference
// solution, every name that is not a builtin.
//
// What a test sees of a call is what it saw in one process: the result
// (exact types, the same float), an exception of the same type name and
// arguments (a class of the solution's own becomes a class of that name
// under its nearest builtin base, so `except KeyError` still catches it),
// and the arguments as the candidate left them (a list, dict, set or deque
// it mutated is updated in place). A failure's traceback shows the test's
// line and, for an exception the candidate raised, the solution's frames,
// so a verdict's Line is the failing assertion or the solution's line as
// before. The solution's exit (sys.exit, os._exit, a signal) during the
// tests ends T the same way, without the marker. The cost, measured in the
// sandbox's own CPU accounting with the zygote: about 12 ms of CPU more per
// item (HumanEval's canonical solutions: 2.8 ms before, 15.6 ms after, median),
// most of it compiling the harness's source (7 to 10 ms); the fork costs
// about 2 ms, and the harness's imports nothing, as the zygote has them.
//
// Generic {id, code, test} items in Python run in the same harness: the
// code in U, the test in T, with every name the test uses that is not a
// builtin standing for the solution's (functions, classes, module-level
// values, and modules, which cross as T's own copy of the installed module
// of that name). Generic tests use the solution's classes, so there the
// tests may also read the attributes of the solution's objects, each read
// answered by U as a call is (Solution().two_sum(...), s.push(1), s.size).
// What that leaves to the solution: a test that reads an attribute or calls
// a method of an object the solution returned (rather than comparing a
// value) gets the solution's answer, as it would in one process; a test
// that compares the value itself cannot be fooled, since a value of the
// solution's own type stays a handle that refuses comparison. And these
// differ from one process: a module-level value is read once, when the
// tests start (a later change by the solution's functions is not seen); a
// test cannot set an attribute of the solution's objects, use one of its
// classes in isinstance, or capture what the solution prints.
//
// Generic bash items run in a harness of the same shape in bash
// (harness.sh): the tests run in the harness's shell, T, which read the
// marker and the tests from its standard input before any of the
// solution's code runs; each call of a solution's function the tests make
// runs in a fresh process, U, that loads the solution and calls the
// function with the call's arguments, standard streams and exit status
// (so $(f 2), echo x | f and f; echo $? work as in one shell). U runs in a
// Landlock domain nested in the sandbox's, from which the kernel refuses
// it T's memory, descriptors and environment (/proc/<pid>/mem, fd,
// environ: the ptrace checks) and, on Linux 6.12 and later, any signal to
// T. The tests see the solution's functions and scalar variables that they
// name, except names that are already something in T (a builtin such as [,
// test or exit, a keyword, a command on PATH, a variable) or that change
// how a shell works (PATH, IFS, BASH_ENV, PROMPT_COMMAND, LD_*, …): so a
// solution cannot redefine what the tests check with, and a solution's
// function named like a command on PATH is not reached. What differs from
// one shell: each call loads the solution anew (top-level code runs again,
// its output hidden; a function's changes to variables do not reach the
// tests); arrays are not shared. What a bash solution can still do:
// before 6.12, kill T (the item then fails); read a
// temporary file T's shell writes for a large here-document in a test (the
// expected output it holds, not the marker).
//
// Generic node items run in a harness of the same shape in JavaScript
// (harness.js): T reads the marker and the tests from its standard input
// first, then starts U (in the same nested Landlock domain, its standard
// input /dev/null), which runs the solution as a script and serves calls
// over a pair of socket pairs that T uses synchronously. The tests run in
// T with each name they use that is not JavaScript's own or a global of
// T's (assert, console, Math, Object… stay T's) standing for the
// solution's binding of that name (function, var, let, const and class
// declarations, or module.exports). Values cross as plain data, decoded by
// hand (numbers with NaN, ±Infinity and -0, BigInt, strings, booleans,
// null, undefined, arrays, plain objects, Map, Set, Date); functions and
// other objects stay in U as handles that T can call, construct (new),
// read properties of (methods are called in U) and pass back, but that
// refuse conversion to a primitive or being changed, and have no
// prototype, so deepStrictEqual against a value fails. The solution's
// errors reach the tests with their class (RangeError…) and message. What
// differs from one process: arguments are copies (a solution's changes to
// an array it was given do not reach the tests); callbacks cannot be
// passed to the solution. What a node solution can still do: before 6.12,
// kill T
// (the item then fails); make a test that only checks truthiness
// (assert.ok(f(x)), console.assert) pass with any object; and, as in one
// process, a console.assert that fails only prints.
//
// The bash and node harnesses enter U's Landlock domain through a few
// lines of Python (ctypes), so they need python3 in the sandbox, as
// HumanEval and MBPP do; without it such an item fails with a message
// saying so.
//
// A harness for another language follows the same shape: a trusted
// process T that keeps the solution's processes U from reaching it (a
// non-dumpable T, or each U in a nested Landlock domain, as harness.sh
// does it), reads the marker and the tests from its own standard input
// before any U can read it (or gives every U /dev/null), runs the tests with the solution's
// names standing for calls into U over pipes that carry plain data only,
// decodes U's answers without running any of U's code, and prints the
// marker only when every test passed. The program Problem.Item builds is
// then T with the solution as data (as harnessProgram does) and the tests
// in Item.Tests, which Run sends after the marker.
//
// # Compiled languages
//
// HumanEval-X items in C++, Java, Go and Rust (split.go) are two programs,
// compiled apart and run as two processes, so that no code of the
// solution's runs in the process whose exit status is the verdict, and
// none of its macros, symbols, classes or init functions reaches the
// tests' compilation. The tests' program, T, is the prompt up to its entry
// function's body, a stub body generated from the function's declaration
// (read from the prompt: C++ types, Java's generic types, Go's types,
// Rust's types, read from the declaration),
// and the tests; the solution's, U, is the prompt, the solution and a main
// that serves the tests' calls. The prompt's other functions (helpers such
// as encode_cyclic) are in both: the tests use T's copy, trusted as they
// are. One sandbox step compiles both at once: T in the build directory,
// U in /tmp/coderun-u inside a Landlock domain nested in the sandbox's,
// which may read the system's directories and write only its own, so
// that neither the compiler (an #include, an include_str!) nor the
// solution can read the tests' sources or program. The next step starts
// U, in such a domain, with /dev/null as its standard input, its output
// in a file, and two pipes as its descriptors 3 (calls) and 4 (answers);
// then reads the run's marker from its standard input, which U never
// had; runs T with the pipes' other ends; kills U; shows what U printed
// (its first 16 KiB), then T's standard error; and prints the marker only
// when T exited with status 0 (T's own exit statuses: a C++ main that
// returned, Java's main without an exception, go test's verdict, rustc's
// test harness's).
//
// Each call of the entry function in T writes its arguments, encoded by
// their declared types (integers in decimal, floats as their bits,
// strings with their length, sequences, maps, pairs, Optional, nil
// slices and maps, Rust's Option, tuples, HashMap and the program's own
// enums and structs, by variant and field names, and the dynamically
// typed values the tests use: boost::any, Java's Object, Go's
// interface{}, Rust's Box<dyn Any> and &dyn Any, each tagged with its
// type), and decodes the answer by the declared result type, or ends T
// with status 3 and a message: when U ended, sent bytes that are not a
// value of that type (an integer out of range, a float where an int was
// declared, a type the tests do not use), or threw or panicked (the
// exception's text; a Rust solution's panic is a panic of the test that
// made the call, with the solution's message and line, as in one
// program, and on T's standard error). So T passes only if every call
// got a well-formed answer and the tests ran to their end, and a hang is
// bounded by the run's wall time. U keeps its state from call to call (one process, one
// Java instance of the solution's class). A solution that leaves from a
// static constructor, an init function or a static initializer, disables
// assert, renames main, catches SIGABRT, takes over TestMain, shadows
// AssertionError, installs a shutdown hook, shadows assert_eq! with a
// macro_rules!, exits from a panic hook or an .init_array constructor, or
// defines the type the tests compare with as equal to everything changes
// only U; one that writes on its descriptor 4 can only answer, as
// returning would (TestForgedCPPVerdicts, TestForgedJavaVerdicts,
// TestForgedGoVerdicts, TestForgedRustVerdicts: 4 of 8, 5 of 6, 2 of 4
// and 6 of 9 of these passed as one program, none now).
// What differs from one program: arguments are copies (a solution's
// changes to them do not reach the tests), and a Java string that comes
// back is interned, so that a test comparing a returned argument with ==
// still holds. U's domain is entered through a few lines of Python, as for
// the bash and node harnesses; before 6.12 it can kill T (the item then
// fails). The cost, in CPU time of all the
// item's processes (both steps) and its wall time, medians of problems 0
// and 13 run as one program and split, interleaved, on a loaded 2-CPU host
// (BenchmarkHumanEvalXSplit): C++ 382 -> 1110 ms of CPU (two compiles of
// 0.27 s), 1.6 -> 4.2 s of wall; Java 1.0 -> 3.0 s, 3.6 -> 12.3 s (two
// javac and two JVMs); Go 1.1 -> 1.8 s, 6.5 -> 10.7 s; JavaScript through
// harness.js 6 -> 72 ms, 0.28 -> 0.71 s. Rust, in a later run at a lighter
// load (3 to 10): 436 -> 1378 ms of CPU (two rustc runs, each compiling
// the wire, in one codegen unit), 0.6 -> 1.7 s of wall, when C++ in the
// same run was 188 -> 638 ms, 0.28 -> 0.72 s.
//
// Rust (split_rust.go): HumanEval-X's Rust prompt defines nothing; its
// declaration holds the entry function's head, and the tests of a few
// problems also call functions that the reference solution defines after
// it (make_palindrome, encode_cyclic, decode_shift: Rust/10 declares the
// helper and tests the other), so every function the tests call is the
// solution's, in U, with a stub in T whose head is the declaration's or
// the reference's, as in one program (which functions are tested does
// not change; a solution lacking one does not compile). A type the tests
// name that the reference defines (Rust/137's RtnType) is T's copy, from
// the reference, with its derives, so that a solution's PartialEq cannot
// judge the answers. Borrowed parameters and results (&str, Vec<&str>,
// &dyn Any, &Vec<f64>) cross as owned values, which the receiving side
// leaks for the life of its process, so that they live as long as the
// declaration asks. T runs under rustc's test harness; one call crosses
// at a time when its tests run in several threads. U's own #[test]
// functions are left out (#[cfg(test)]), so that it is no test binary.
// Without a reference solution only the declaration's function crosses.
// What that leaves: a solution that makes encode_cyclic and decode_cyclic
// both the identity passes Rust/38, as in one program (its tests use the
// solution's encode_cyclic); and Rust/50, whose tests do not compile here
// (rand 0.4's API), is an error now (the harness's: the tests did not
// compile) where it was a failed compile.
//
// JavaScript HumanEval-X items run through harness.js (see above): the
// prompt and the solution in U, the tests in T with the prompt's other
// functions, which T defines itself, so that the tests reach only the
// entry function in U.
//
// Split items and the bash and node harnesses keep the solution from
// the tests by that nested Landlock domain, and so are judged only where
// the sandboxes have Landlock: where they have none (a kernel before
// 5.13, or one where Landlock is not among the active security modules,
// and gVisor, whose kernel does not implement it) the solution's process,
// the same user as the tests', could read their sources and the harness's
// memory and make the tests exit 0, so such an item's verdict is an error
// saying why, asked of the runtime once per Run (confine.go). Python's
// harness needs no Landlock: its T is non-dumpable.
//
// The package knows nothing of terminals or flags; cmd/coderun's eval
// command is a thin layer over it, and a server can expose Run as it is.
package eval
