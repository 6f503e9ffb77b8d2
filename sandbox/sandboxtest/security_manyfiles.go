//go:build linux

package sandboxtest

import (
	"testing"

	"github.com/coderun/coderun/sandbox"
)

// manyFilesOut models a run that fills its workspace with as many empty
// files with long names as its inode cap allows, for the host to list after
// the run (files out, or a session's listing over an API): the host must
// report at most sandbox.MaxReportedFiles of them, say the list is
// truncated, and still report the run as it ended. (The host's memory for
// the listing is bounded by what it reports: hostdir's
// TestCollectFilesReadsWhatItReports.)
func (h *harness) manyFilesOut(t *testing.T) {
	req := attackPy(nil, `
name = "f" * 200
n = 0
try:
    for n in range(1 << 20):
        os.close(os.open("%s%07d" % (name, n), os.O_CREAT | os.O_WRONLY, 0o644))
except OSError as e:
    blocked("create file %d" % n, ename(e.errno))
print("MADE:%d" % n)
done()
`)
	req.Limits = limits(sandbox.Limits{WorkspaceBytes: 16 << 20})
	res := h.attack(t, req)
	if len(res.Files) > sandbox.MaxReportedFiles || !res.FilesTruncated {
		t.Errorf("%d files reported (truncated %v) of %v made: want at most %d, and truncated", len(res.Files), res.FilesTruncated, lines(res.Stdout, "MADE:"), sandbox.MaxReportedFiles)
	}
}
