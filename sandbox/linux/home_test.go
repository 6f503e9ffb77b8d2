package linux_test

import (
	"testing"

	"github.com/coderun/coderun/sandbox/linux"
)

// TestHomeUserIsTheWorkspace: /home/user, where code written for E2B's
// sandboxes keeps its files, is the workspace, in a fresh sandbox and in
// one the zygote forks; nothing else of /home is there, nor writable.
func TestHomeUserIsTheWorkspace(t *testing.T) {
	for _, zygote := range []bool{false, true} {
		h := newRuntime(t, linux.Options{Zygote: zygote})
		res := h.run(t, py(`
import os
open("/home/user/from-home.txt", "w").write("same file")
print(open("/work/from-home.txt").read(), os.listdir("/home"), os.path.realpath("/home/user"))
try:
    open("/home/other", "w")
    print("wrote /home/other")
except OSError as e:
    print(type(e).__name__)
`))
		want := "same file ['user'] /work\nOSError\n" // EROFS
		if res.ExitCode != 0 || res.Stdout != want {
			t.Errorf("zygote %v: exit %d, stdout %q, stderr %q; want %q", zygote, res.ExitCode, res.Stdout, res.Stderr, want)
		}
	}
}
