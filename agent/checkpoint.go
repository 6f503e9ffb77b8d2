package agent

import (
	"context"
	"sort"
	"strings"

	"github.com/coderun/coderun/store"
)

// The workspace of a run as its records tell it. Each execution step
// records only what its code changed: the files it created or changed (in
// the run's files, the latest version of each path, stamped with the step
// that wrote it) and the paths it removed (ExecutionRecord.Removed). From
// these the workspace is known at the checkpoint, and before any step for
// every path no later step rewrote.

// removal is a path an execution removed, with the seq of its step.
type removal struct {
	path string
	seq  int
}

// removals returns the paths the run's executions removed, in step order.
func (r *runner) removals(ctx context.Context) ([]removal, error) {
	steps, err := r.store.Steps(ctx, r.run.ID, StepExecution)
	if err != nil {
		return nil, err
	}
	var out []removal
	for _, s := range steps {
		var ex ExecutionRecord
		if err := s.Decode(&ex); err != nil {
			return nil, err
		}
		for _, p := range ex.Removed {
			out = append(out, removal{path: p, seq: s.Seq})
		}
	}
	return out, nil
}

// workspaceAt returns the entries of the workspace as they were before the
// step numbered before, or at the checkpoint (after every step) when before
// is 0, in path order: the inputs, overlaid by the outputs written before
// that step, less what a step after the writing (and before that step)
// removed. A path whose only recorded version was written at or after
// before is left out: what it held earlier is not kept.
func workspaceAt(stored []store.File, removed []removal, before int) []store.File {
	inputs := map[string]store.File{}
	outputs := map[string]store.File{}
	for _, f := range stored {
		if f.Role == store.RoleInput {
			f.Step = 0
			inputs[f.Path] = f
		} else {
			outputs[f.Path] = f
		}
	}
	paths := make([]string, 0, len(inputs)+len(outputs))
	for p := range inputs {
		paths = append(paths, p)
	}
	for p := range outputs {
		if _, ok := inputs[p]; !ok {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	var out []store.File
	for _, p := range paths {
		f, ok := outputs[p]
		if !ok || (before > 0 && f.Step >= before) {
			if f, ok = inputs[p]; !ok {
				continue
			}
		}
		if !removedAfter(removed, f, before) {
			out = append(out, f)
		}
	}
	return out
}

// removedAfter reports whether f (or a directory holding it) was removed
// after the step that wrote it and before the step numbered before (0: at
// any later step).
func removedAfter(removed []removal, f store.File, before int) bool {
	for _, r := range removed {
		if r.seq <= f.Step || (before > 0 && r.seq >= before) {
			continue
		}
		if r.path == f.Path || strings.HasPrefix(f.Path, r.path+"/") {
			return true
		}
	}
	return false
}
