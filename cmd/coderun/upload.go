package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/coderun/coderun/sandbox"
)

// uploadOverhead is what each input file costs in a workspace beyond its
// bytes, as Request validation counts it.
const uploadOverhead = 4096

// readUploads reads "--file LOCAL[:REMOTE]" flags into workspace files,
// REMOTE defaulting to LOCAL's base name and the mode to LOCAL's. Each
// LOCAL is read by sandbox.ReadUpload: a regular file only (a FIFO or a
// device is refused, not read), through a symbolic link only when the link
// stays within its own directory. Reading stops as soon as the uploads
// could no longer fit in a workspace of the given size, so that a huge or
// endless file never fills this process's memory.
func readUploads(specs []string, workspace int64) ([]sandbox.File, error) {
	var files []sandbox.File
	left := workspace
	for _, spec := range specs {
		local, remote, ok := strings.Cut(spec, ":")
		if !ok || remote == "" {
			remote = filepath.Base(local)
		}
		data, mode, err := sandbox.ReadUpload(local, max(left-uploadOverhead, 0))
		switch {
		case errors.Is(err, sandbox.ErrTooLarge):
			return nil, usagef("--file %s: the uploads take more than the workspace's %s (see --workspace-size)",
				spec, sandbox.FormatBytes(workspace))
		case err != nil:
			return nil, usagef("--file %s: %v", spec, err)
		}
		left -= int64(len(data)) + uploadOverhead
		files = append(files, sandbox.File{Path: remote, Content: data, Mode: mode})
	}
	return files, nil
}

// readProgram reads the program FILE, at most one byte more than code may
// have (so that /dev/zero or an endless pipe is refused as too large
// rather than read forever). A pipe is fine: coderun exec <(generate).
func readProgram(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return "", fmt.Errorf("%s is a directory", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, sandbox.MaxCodeBytes+1))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return string(data), nil
}

// checkOutDir makes sure, before anything runs, that the run's files can
// be saved under dir: it is a directory (made if missing) in which a file
// can be created. Otherwise the program would run and its files be lost.
func checkOutDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case err == nil && !fi.IsDir():
		return usagef("--out %s: not a directory (--out names a directory to save the run's files in; it is made if missing)", dir)
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return usagef("--out %s: cannot make the directory: %v", dir, err)
		}
	case err != nil:
		return usagef("--out %s: %v", dir, err)
	}
	probe, err := os.CreateTemp(dir, ".coderun-out-check-*")
	if err != nil {
		return usagef("--out %s: cannot write in this directory: %v", dir, err)
	}
	probe.Close()
	return os.Remove(probe.Name())
}

// saveOut saves a run's files under dir (see sandbox.SaveFiles), at most
// limit bytes, and tells on stderr what was deliberately left out. The
// error names every file that could not be saved.
func saveOut(dir string, files []sandbox.FileInfo, limit int64, stderr io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	rep, err := sandbox.SaveFiles(dir, files, limit)
	for _, s := range rep.Skipped {
		fmt.Fprintf(stderr, "coderun: --out: skipped %s: %s\n", s.Path, s.Why)
	}
	return err
}
