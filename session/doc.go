// Package session gives agents what a notebook gives people: a context
// whose state carries from one cell to the next, rich outputs in Jupyter's
// shapes (package jupyter), files that persist, and a way to stop, restart
// and replay.
//
// # The story
//
// A Session owns one long-lived sandbox (sandbox.Interactive) and runs an
// interpreter in it: IPython's InteractiveShell for Python, an interactive
// bash for bash. Execute sends a cell and returns a Cell once it has ended:
// its outputs (stream, display_data, execute_result, error, exactly as
// nbformat 4 has them; delivered to Exec.OnOutput as they arrive), its
// Status (ok, error, interrupted, timeout, died), its execution count and
// timing. Every cell is kept in the history, which exports as a notebook
// that Jupyter opens unchanged and that Replay runs again in a new session.
//
// Limits are a sandbox.Limits, the type that bounds a one-shot run, in two
// kinds. The session's memory, processes, open files and workspace size are
// the sandbox's, shared by everything that runs in it. A cell's time limit
// (WallTime), CPU-time limit (CPUTime) and output limit (OutputBytes) are
// enforced here: past its time or its CPU time, a
// cell is interrupted (SIGINT: KeyboardInterrupt in Python, Ctrl-C in bash)
// and the session's state is kept; a cell that does not stop within the
// grace period takes the interpreter with it, and the session starts a new
// one. Whenever an interpreter ends on its own (exit, os._exit, the memory
// limit's OOM kill, a crash), the cell it was running says so (StatusDied,
// Cell.Ended with the sandbox's Reason, an error output), and if it ended
// between cells, the next cell says so first; a fresh interpreter is started
// in the same sandbox, so variables are lost and files are kept. Nothing is
// silent, and nothing hangs.
//
// A Manager keeps a service's sessions, each belonging to a tenant: a
// tenant's view of it (Manager.Tenant) creates, finds by ID and lists that
// tenant's sessions only (another tenant's ID is not found). It evicts
// those idle past a timeout and, when full, the least recently used idle
// one. Each eviction is reported (ManagerOptions.OnEvict), and the
// evicted session answers every later call with an *EvictedError. A Pool
// keeps Python sessions started ahead of time (driver up, IPython ready,
// chosen modules imported), each handed out once.
//
// # The driver protocol
//
// The program a session starts in the sandbox is a driver embedded in this
// package (driver/python.py, driver/bash.sh), run by the sandbox's bootstrap
// as Program.Code. The host talks to it over the program's standard streams.
// Because user code runs in the driver's process, nothing it says is
// trusted: the host bounds every message and every cell's output, treats
// anything unreadable as a protocol error, and kills a driver that stops
// answering.
//
// Nor is the end of a cell taken on the driver's word: a cell can write the
// protocol itself (Python: the driver's descriptors are its own process's;
// bash: the nonce is in its own shell), forged outputs and a forged "done"
// included. A "done" is a claim. The cell ends when, as a claim arrives,
// the host sees from outside the sandbox that the interpreter's main thread
// is blocked reading its requests (sandbox.Process.AwaitingInput: on Linux,
// read(2) on the stdin pipe, in the host's /proc; on gVisor, in the
// Sentry's report of its tasks' reads): a fact no write can fake.
// Until then the cell is running, its time limit applies, and what it
// writes is its own output. After a failed check the host checks again,
// more and more rarely; one that finds the interpreter waiting asks it to
// repeat its "done" (Python: {"op":"ping"}; bash: an empty line), so that
// everything written before is read first. An honest driver is in its read
// microseconds after its "done": the first check succeeds. What this does
// not stop: a cell may take over the interpreter (patch the driver, read the
// requests itself) and so decide what later cells report, as any code in a
// Jupyter kernel can; each of those cells still ends only when the
// interpreter waits for the host, within its own time limit. A runtime that
// cannot observe the interpreter (AwaitingInput unsupported) is taken at the
// driver's word.
//
// Python. At start the driver keeps private, non-inheritable copies of its
// fds 0 and 1 for the protocol, points fd 0 at /dev/null, and points fds 1
// and 2 at two pipes of its own, which a thread drains into stream messages:
// print, os.write(1, ...) and subprocesses alike are captured, bytes that are
// not UTF-8 are decoded with replacement characters, and output is capped
// per cell (what is past the cap is read and dropped, so writers never
// block). Its fd 2 copy carries only its own fatal diagnostics. Messages are
// JSON objects, one per line:
//
//	host → driver
//	  {"op":"init","preload":["numpy"],"output_limit":1048576}   once, first
//	  {"op":"execute","id":7,"code":"..."}                        one per cell
//	  {"op":"ping"}                     repeat the last "done" (see above)
//	driver → host
//	  {"type":"ready","protocol":1,"version":"3.11.2","ipython":"8.5.0","init_ms":...}
//	    (or {"type":"ready","error":"..."}: the start failed)
//	  {"type":"started","id":7,"execution_count":3}
//	  {"type":"stream","id":7,"name":"stdout","text":"..."}
//	  {"type":"display_data","id":7,"data":{MIME bundle},"metadata":{},"transient":{"display_id":...},"update":false}
//	  {"type":"execute_result","id":7,"execution_count":3,"data":{...},"metadata":{}}
//	  {"type":"error","id":7,"ename":"ZeroDivisionError","evalue":"division by zero","traceback":[...]}
//	  {"type":"clear_output","id":7,"wait":false}
//	  {"type":"done","id":7,"status":"ok"|"error","execution_count":3,"truncated":false,"exiting":false}
//
// Outputs come from IPython's own machinery: a display hook and a display
// publisher that write these messages, and the error hook (tracebacks
// without colours, pointing into the cell: "Cell In [3], line 2"). Every
// rich message is sent after the stream output written before it. Figures
// are drawn by matplotlib's inline backend (MPLBACKEND is set to it, as
// ipykernel does): every figure open at the end of a cell, and plt.show(),
// becomes a PNG display_data. SIGINT is ignored between cells; during a cell
// it goes to the cell's handler (Python's default raises KeyboardInterrupt
// right in the user's frame; a handler the user installs stays for later
// cells), except while the driver writes a message, when it is deferred to
// the end of the write. The host interrupts only after "started". Each cell starts
// with fds 1 and 2 and sys.stdout and sys.stderr restored, whatever the
// previous cell rebound or closed. os._exit sends what the cell wrote before
// the process ends. A forked child (multiprocessing's workers) never writes a
// message and exits if it returns to the driver's loop. After exit() or
// quit(), "done" says "exiting" and the driver ends.
//
// Bash. The driver keeps copies of its stdout and stderr and replaces itself
// with an interactive bash (no rc files, no line editing, no history),
// because only an interactive shell treats SIGINT as a terminal's Ctrl-C
// does: the running command and the rest of the cell stop, loops included,
// and the shell goes back to its prompt with its state intact. The user's
// output is not wrapped: stdout and stderr are the program's own pipes, and
// the driver marks them with lines carrying a random per-interpreter nonce
// (sent on the shell's input, never in its environment) and, for a cell's
// start and end, a random per-cell key, so that a background job of one
// cell, which knows only earlier keys, cannot mark a later cell's start or
// end:
//
//	host → bash     __cr_init NONCE\n  first
//	                __cr_read 7 KEY $'CODE' && eval "$__cr_code" </dev/null\n
//	                (the code quoted byte for byte: anything but printable
//	                ASCII, the quote, the backslash and '!' as \xHH)
//	                \n                 repeat the last "done" (see above)
//	bash → host     NONCE:R\n          on stdout and stderr: ready
//	                NONCE:S:7:KEY\n    on stdout and stderr: cell 7 started
//	                NONCE:D:7:KEY:STATUS\n on stdout and stderr, from
//	                                   PROMPT_COMMAND: cell 7 ended, its last status
//
// The code is evaluated at the shell's top level, so variables (declare
// included), functions, aliases, options and the working directory persist;
// its stdin is /dev/null. A cell is over when both streams have shown its
// done marker, so all its output has been read. Text between markers is the
// cell's output, decoded as UTF-8 with replacement, a character or marker
// cut between two reads held back until the rest arrives.
//
// Both drivers: what follows a cell's end in its streams (output of
// background work) is kept with that cell, within its output limit, as
// Jupyter does; stdout and stderr are separate pipes, so their relative
// order is not preserved.
package session
