package e2b

import (
	"fmt"
	"testing"
)

// TestChanges: what a watch reports between two snapshots.
func TestChanges(t *testing.T) {
	const file, dir = 0o100000, 0o040000
	a := map[string]snapshotEntry{
		"same":     {file, 3, 0o644, 10},
		"written":  {file, 3, 0o644, 10},
		"grown":    {file, 3, 0o644, 10},
		"chmod":    {file, 3, 0o644, 10},
		"gone":     {file, 3, 0o644, 10},
		"d":        {dir, 40, 0o755, 10},
		"replaced": {file, 3, 0o644, 10},
	}
	b := map[string]snapshotEntry{
		"same":     {file, 3, 0o644, 10},
		"written":  {file, 3, 0o644, 11},
		"grown":    {file, 4, 0o644, 10},
		"chmod":    {file, 3, 0o600, 10},
		"d":        {dir, 60, 0o755, 11}, // a directory's own size and time: no event
		"new":      {file, 0, 0o644, 12},
		"replaced": {dir, 40, 0o755, 12},
	}
	got := fmt.Sprint(changes(a, b))
	want := "[map[name:chmod type:EVENT_TYPE_CHMOD] map[name:gone type:EVENT_TYPE_REMOVE] map[name:grown type:EVENT_TYPE_WRITE] " +
		"map[name:new type:EVENT_TYPE_CREATE] map[name:replaced type:EVENT_TYPE_REMOVE] map[name:replaced type:EVENT_TYPE_CREATE] map[name:written type:EVENT_TYPE_WRITE]]"
	if got != want {
		t.Errorf("changes:\n got %s\nwant %s", got, want)
	}
}
