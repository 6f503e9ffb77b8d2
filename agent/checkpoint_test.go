package agent

import (
	"strings"
	"testing"

	"github.com/coderun/coderun/store"
)

// workspaceAt tells the workspace at the checkpoint and before a step from
// the latest version of each path and the recorded removals.
func TestWorkspaceAt(t *testing.T) {
	in := func(p, content string) store.File {
		return store.File{Role: store.RoleInput, Path: p, Kind: "file", Content: []byte(content)}
	}
	out := func(p, content string, step int) store.File {
		return store.File{Role: store.RoleOutput, Path: p, Kind: "file", Content: []byte(content), Step: step}
	}
	stored := []store.File{
		in("data.csv", "input"),
		in("gone.txt", "input, removed at step 4"),
		out("data.csv", "rewritten at step 6", 6),
		out("early.txt", "written at step 2", 2),
		out("late.txt", "written at step 8", 8),
		{Role: store.RoleOutput, Path: "d", Kind: "dir", Step: 2},
		out("d/a", "in a directory removed at step 6", 3),
		out("again.txt", "removed at step 4, written again at step 8", 8),
	}
	removed := []removal{{"gone.txt", 4}, {"again.txt", 4}, {"d", 6}}
	for _, c := range []struct {
		before int
		want   string
	}{
		// At the checkpoint: every latest version, less what was removed after it.
		{0, "again.txt=removed at step 4, written again at step 8 data.csv=rewritten at step 6 early.txt=written at step 2 late.txt=written at step 8"},
		// Before step 5: the input for the path rewritten later, the
		// directory not yet removed, the removal at step 4 applied.
		{5, "d= d/a=in a directory removed at step 6 data.csv=input early.txt=written at step 2"},
		// Before step 3: what step 3 wrote is not there yet, nor removed.
		{3, "d= data.csv=input early.txt=written at step 2 gone.txt=input, removed at step 4"},
		// Before step 1: the inputs only.
		{1, "data.csv=input gone.txt=input, removed at step 4"},
	} {
		var got []string
		for _, f := range workspaceAt(stored, removed, c.before) {
			got = append(got, f.Path+"="+string(f.Content))
		}
		if g := strings.Join(got, " "); g != c.want {
			t.Errorf("before step %d:\n got %s\nwant %s", c.before, g, c.want)
		}
	}
}
