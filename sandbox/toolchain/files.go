package toolchain

import (
	"bytes"
	"io/fs"
	"strings"

	"github.com/coderun/coderun/sandbox"
)

// collect lists what the run created or changed in the workspace, as a
// one-shot run's Result.Files: the build directory left out, an input
// file only when its content or mode changed (then Created is false), and
// up to maxContent bytes of each regular file, all together at most budget.
func collect(sb sandbox.Sandbox, inputs []sandbox.File, maxContent, budget int64) ([]sandbox.FileInfo, bool, error) {
	all, truncated, err := sb.Files()
	if err != nil {
		return nil, false, err
	}
	given := map[string]sandbox.File{}
	for _, f := range inputs {
		if p, err := sandbox.CleanPath(f.Path); err == nil {
			given[p] = f
		}
	}
	var out []sandbox.FileInfo
	for _, fi := range all {
		if fi.Path == BuildDir || strings.HasPrefix(fi.Path, BuildDir+"/") {
			continue
		}
		if in, ok := given[fi.Path]; ok {
			if fi.Kind == sandbox.KindFile && unchanged(sb, in, fi) {
				continue
			}
			fi.Created = false
		}
		if maxContent > 0 && fi.Kind == sandbox.KindFile && fi.SameFileAs == "" && budget > 0 {
			data, cut, err := sb.ReadFile(fi.Path, min(maxContent, budget))
			if err == nil {
				fi.Content, fi.ContentTruncated = data, cut
				budget -= int64(len(data))
			}
		}
		out = append(out, fi)
	}
	return out, truncated, nil
}

// unchanged reports whether the workspace's file fi still holds the input
// file in, with its mode.
func unchanged(sb sandbox.Sandbox, in sandbox.File, fi sandbox.FileInfo) bool {
	mode := in.Mode
	if mode == 0 {
		mode = 0o644
	}
	if fi.Size != int64(len(in.Content)) || fi.Mode.Perm() != (mode&fs.ModePerm) {
		return false
	}
	data, cut, err := sb.ReadFile(fi.Path, fi.Size)
	return err == nil && !cut && bytes.Equal(data, in.Content)
}
