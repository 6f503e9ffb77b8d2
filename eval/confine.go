package eval

import (
	"context"
	"fmt"
	"sync"

	"github.com/coderun/coderun/sandbox"
)

// Items whose solution runs in processes of its own beside the tests'
// (split items, and the bash and node harnesses) are kept from the tests
// by a Landlock domain nested in the sandbox's: without it the solution's
// process, the same user as the tests', can read the tests' sources and
// binary, read the harness's memory (the marker) and write it (make the
// tests exit 0). Sandboxes have no Landlock on a kernel before 5.13, on
// one where Landlock is not among the active security modules, and on
// gVisor, whose kernel does not implement it. Such items are not judged
// there: their verdict is an error saying why, rather than a pass a
// solution could forge. (Python's harness keeps the solution out by a
// non-dumpable trusted process, which every runtime honours; it needs no
// Landlock.)

// needsLandlock reports whether it keeps its solution from its tests by
// a nested Landlock domain.
func (it *Item) needsLandlock() bool {
	if it.split != nil {
		return true
	}
	return it.Tests != "" && (it.Language == sandbox.Bash || it.Language == sandbox.Node)
}

// landlockProbe asks the kernel for its Landlock ABI version; it exits 0
// when there is one, 3 when there is none.
const landlockProbe = `import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
sys.exit(0 if libc.syscall(444, None, 0, 1) >= 1 else 3)`

// confinement tells, once per Run, whether the runtime's sandboxes can
// confine a solution apart from its tests.
type confinement struct {
	rt   sandbox.Runtime
	once sync.Once
	why  string // why they cannot; "" when they can
	err  error  // the runtime could not run the probe at all
}

// check returns "" when the runtime's sandboxes have Landlock, else why
// an item that needs it cannot be judged there.
func (c *confinement) check(ctx context.Context) (string, error) {
	c.once.Do(func() {
		res, err := c.rt.Run(ctx, sandbox.Request{Language: sandbox.Python, Code: landlockProbe})
		switch {
		case err != nil:
			c.err = fmt.Errorf("eval: asking the %s runtime's sandboxes for Landlock: %w", c.rt.Name(), err)
		case res.OK():
		case res.Reason == sandbox.ReasonExited && res.ExitCode == 3:
			c.why = fmt.Sprintf("not judged: the %s runtime's sandboxes have no Landlock (Linux 5.13 or later with Landlock among its security modules; gVisor has none), "+
				"which keeps this item's solution from its tests (their sources, memory and exit status): a solution could forge a pass here", c.rt.Name())
		default:
			c.why = "not judged: cannot tell whether the sandboxes have Landlock, which keeps this item's solution from its tests: " + res.Summary()
		}
	})
	if c.err != nil && ctx.Err() == nil {
		return "", c.err
	}
	return c.why, nil
}
