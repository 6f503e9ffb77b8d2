// Package sandboxtest is the conformance and security suite that every
// sandbox runtime must pass, whatever its isolation technology (Linux
// namespaces, gVisor, a container engine).
//
// A runtime's own test calls Run with a constructor:
//
//	func TestSuite(t *testing.T) {
//		sandboxtest.Run(t, func(t *testing.T) sandbox.Runtime {
//			rt, err := myruntime.New(...)
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { rt.Close() })
//			return rt
//		})
//	}
//
// The suite has three groups of subtests. Conformance checks the contract
// of sandbox.Runtime: languages, exit codes, standard input, environment,
// files in and out, output caps, usage, every termination reason, request
// validation, a fresh sandbox per run and concurrent runs. Interactive,
// for a runtime that also implements sandbox.Interactive (skipped
// otherwise), checks the long-lived sandboxes sessions use: talking to a
// program over its pipes, signals, Kill, a cancelled Wait, restarting in
// the same workspace, Close, the sandbox's limits on each program, files
// in and out while a program runs, two sandboxes kept apart, and
// AwaitingInput, each program's own clocks (uptime, boot time); a remote
// client's hostile file paths, links swapped in while the host reads and
// writes the workspace, and a closed sandbox's file operations
// (interactive_hostile.go); and, when its sandboxes implement
// sandbox.Archiver, tar streams in and out, hostile ones included. Security runs
// real attack code inside the sandbox, one subtest per threat (each
// function's doc comment names the threat it models), and asserts both that
// the attack was contained and that the run ended for the reason the
// runtime reported.
//
// Attack programs report on themselves: they print "ESCAPED: ..." for every
// step that should have failed and did not, "blocked: ..." for every step
// that failed as it should, and "DONE" when they reach their end, so that
// an attack that crashed early is never mistaken for one that was contained.
// Where the sandbox cannot see the result of an attack (a datagram sent to a
// host port, a daemon left behind, a file written to a host directory),
// the suite checks on the host side.
//
// The suite runs on Linux hosts and needs python3 and bash in the sandbox
// (node is optional). Run as root to let it plant canaries in /root; it
// uses modest limits so that it finishes in well under a minute on two cores.
package sandboxtest
