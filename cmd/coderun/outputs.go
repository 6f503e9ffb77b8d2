package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// checkOutputFile makes sure that path (given with flag) can take a
// command's output before anything runs, so that work is never done only to
// be lost: it must not be a directory, nor one of the command's inputs, and
// it (or, when it does not exist yet, its directory) must be writable. An
// empty path and "-" (standard output) are always fine.
func checkOutputFile(flag, path string, inputs ...string) error {
	if path == "" || path == "-" {
		return nil
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		dir := filepath.Dir(path)
		di, err := os.Stat(dir)
		if err != nil {
			return usagef("%s %s: its directory: %v", flag, path, unwrapPath(err))
		}
		if !di.IsDir() {
			return usagef("%s %s: %s is not a directory", flag, path, dir)
		}
		if err := unix.Access(dir, unix.W_OK); err != nil {
			return usagef("%s %s: cannot create files in %s: %v", flag, path, dir, err)
		}
		return nil
	case err != nil:
		return usagef("%s %s: %v", flag, path, unwrapPath(err))
	case fi.IsDir():
		return usagef("%s %s: is a directory (give a file name)", flag, path)
	}
	for _, in := range inputs {
		if in == "" {
			continue
		}
		if ii, err := os.Stat(in); err == nil && os.SameFile(fi, ii) {
			return usagef("%s %s: is the input %s itself; write the output elsewhere", flag, path, in)
		}
	}
	if err := unix.Access(path, unix.W_OK); err != nil {
		return usagef("%s %s: not writable: %v", flag, path, err)
	}
	return nil
}

// unwrapPath drops the *PathError's repetition of the path.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// errOutputLost is what a command says when its output could not be kept
// after it ran; its exit status is then 1, never 0.
func errOutputLost(flag, path string, err error) error {
	return fmt.Errorf("%s %s: the results could not be saved: %w", flag, path, err)
}
