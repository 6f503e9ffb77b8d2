package toolchain

import (
	"bytes"
	"errors"
	"io/fs"
	"sort"
	"strings"
	"syscall"

	"github.com/coderun/coderun/sandbox"
)

// collect fills res's Files, FilesTruncated and Removed from what the run
// did in the workspace, as a one-shot run's result: the build directory
// left out, an input file only when its content or mode changed (then
// Created is false), up to maxContent bytes of each regular file, all
// together at most budget; and the input files no longer there.
func collect(res *sandbox.Result, sb sandbox.Sandbox, inputs []sandbox.File, maxContent, budget int64) error {
	all, truncated, err := sb.Files()
	if err != nil {
		return err
	}
	res.Files, res.FilesTruncated = changed(sb, all, inputs, maxContent, budget), truncated
	res.Removed = removed(sb, all, inputs)
	return nil
}

// changed is what of the workspace's entries all the run created or
// changed (see collect).
func changed(sb sandbox.Sandbox, all []sandbox.FileInfo, inputs []sandbox.File, maxContent, budget int64) []sandbox.FileInfo {
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
	return out
}

// removed lists, in path order, the input files that are not in the
// workspace under their path: not among its entries all (which may be cut
// short) nor there when read.
func removed(sb sandbox.Sandbox, all []sandbox.FileInfo, inputs []sandbox.File) []string {
	listed := map[string]bool{}
	for _, fi := range all {
		listed[fi.Path] = true
	}
	var out []string
	for _, f := range inputs {
		p, err := sandbox.CleanPath(f.Path)
		if err != nil || listed[p] {
			continue
		}
		if _, _, err := sb.ReadFile(p, 0); errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
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
