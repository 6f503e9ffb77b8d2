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
// end: Run appends a line that prints a random marker, so a program that
// leaves early with exit(0) (which the reference HumanEval harness counts as
// a failure) does not pass.
//
// The package knows nothing of terminals or flags; cmd/coderun's eval
// command is a thin layer over it, and a server can expose Run as it is.
package eval
