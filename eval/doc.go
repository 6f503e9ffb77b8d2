// Package eval scores programs against their tests in bulk, each in a fresh
// sandbox: the batch operation behind "coderun eval".
//
// The story of a run, in the order of this package's files:
//
//	jsonl.go    input files: JSON Lines, plain or gzip-compressed, read with
//	            line numbers so that every bad line can be reported (LineError)
//	problem.go  one benchmark problem in one of three shapes (HumanEval, MBPP,
//	            generic {id, code, test}), detected per line or forced; a
//	            problem turns a solution into the program to run (Program)
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
// appends to the program an epilogue that copies its standard input to its
// output; the item passes only if the marker came out. A program that
// leaves early with exit(0), sys.exit(0), os._exit(0) or process.exit(0)
// (which the reference HumanEval harness counts as a failure) does not
// pass, and the marker is in none of the program's source, code objects,
// environment or files, so a solution cannot find it there and print it
// early to skip its tests; a line of the marker's shape is not the marker.
//
// What this cannot stop, and why. A solution runs in the same process as
// the tests that judge it: anything the harness's code in that process can
// do, the solution can do first. Here, a solution that reads its own
// standard input, prints it and exits with status 0 is scored passed; in
// the same way a solution may patch what the tests use (return an object
// equal to everything, replace builtins, rebind the test function). No
// in-process signal (marker, descriptor, exit status) is out of its
// reach. A verdict that a hostile solution cannot forge needs the tests to
// run in a process the solution cannot touch, with only plain data (never
// objects that run code, such as pickles) passing between the two: for
// HumanEval's check(candidate) and MBPP's assertions, that means calling
// the candidate across processes, with the semantic questions it raises
// (arguments the candidate mutates, helpers of the prompt used by the
// tests, MBPP's tests that build the solution's own classes). Until then,
// treat verdicts of untrusted completions as a solution's claim that an
// audit can check (its stdout, stderr and code are kept), not as proof.
//
// The package knows nothing of terminals or flags; cmd/coderun's eval
// command is a thin layer over it, and a server can expose Run as it is.
package eval
