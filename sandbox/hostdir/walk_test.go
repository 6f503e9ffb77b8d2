package hostdir

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/coderun/coderun/sandbox"
)

// A workspace can hold as many empty files as its inode cap allows (262,144
// in the default 256 MiB, a million at most), each with a 255-byte name;
// listing it must cost the host memory for the entries it reports
// (sandbox.MaxReportedFiles), not for every name in the directory. Before,
// each directory was read whole before the walk could stop: about 330 bytes
// of the host's heap per file, 85 MB for a default workspace full of them,
// on every run's files out and every session's file listing.
func TestCollectFilesReadsWhatItReports(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 20,000 files")
	}
	dir := t.TempDir()
	if shm, err := os.MkdirTemp("/dev/shm", "coderun-walk-"); err == nil { // quicker to fill than a disk
		dir = shm
		t.Cleanup(func() { os.RemoveAll(shm) })
	}
	const n = 20000
	long := strings.Repeat("x", 240)
	for i := range n {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s%08d", long, i)))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	files, truncated, err := CollectFiles(dir, nil, 0)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if !truncated || len(files) != sandbox.MaxReportedFiles {
		t.Errorf("%d files reported (truncated %v), want %d and truncated", len(files), truncated, sandbox.MaxReportedFiles)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("listing %d files allocated %d KiB", n, alloc>>10)
	// What the reported entries need, with room to spare; reading all
	// 20,000 names cost about 18 MB.
	if limit := uint64(4 << 20); alloc > limit {
		t.Errorf("listing %d files allocated %d KiB on the host, want at most %d KiB: the walk reads more than it reports", n, alloc>>10, limit>>10)
	}
}
