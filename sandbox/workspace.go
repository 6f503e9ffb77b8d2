package sandbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"
)

// MaxReportedFiles bounds Result.Files; FilesTruncated tells when more changed.
const MaxReportedFiles = 1000

// Snapshot records the workspace's input files, so that what a run created or
// changed can be told apart from what it was given.
type Snapshot map[string]stamp

type stamp struct {
	size  int64
	mtime time.Time
	mode  fs.FileMode
}

// WriteFiles places files in dir (the host side of a workspace), creating
// parent directories, owned by uid:gid, and returns the snapshot to compare
// against after the run. Paths must have passed CleanPath. Writing goes
// through an os.Root, so nothing can land outside dir.
func WriteFiles(dir string, files []File, uid, gid int) (Snapshot, error) {
	snap := Snapshot{}
	if len(files) == 0 {
		return snap, nil
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	defer root.Close()
	for _, f := range files {
		p, err := CleanPath(f.Path)
		if err != nil {
			return nil, err
		}
		if d := filepath.Dir(p); d != "." {
			if err := mkdirAllOwned(root, d, uid, gid); err != nil {
				return nil, fmt.Errorf("workspace: create %s: %w", d, err)
			}
		}
		mode := f.Mode.Perm()
		if mode == 0 {
			mode = 0o644
		}
		w, err := root.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, mode)
		if err != nil {
			return nil, fmt.Errorf("workspace: write %s: %w", p, err)
		}
		_, err = w.Write(f.Content)
		if err == nil {
			err = w.Chmod(mode)
		}
		if err == nil {
			err = w.Chown(uid, gid)
		}
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("workspace: write %s: %w", p, err)
		}
		fi, err := root.Lstat(p)
		if err != nil {
			return nil, fmt.Errorf("workspace: %w", err)
		}
		snap[p] = stamp{fi.Size(), fi.ModTime(), fi.Mode()}
	}
	// The directories made for the files are part of the input too: record
	// them once every file is in place, so that only the run's own changes
	// to them are reported.
	for _, f := range files {
		p, _ := CleanPath(f.Path) // checked above
		for d := filepath.Dir(p); d != "."; d = filepath.Dir(d) {
			if _, ok := snap[d]; ok {
				break
			}
			fi, err := root.Lstat(d)
			if err != nil {
				return nil, fmt.Errorf("workspace: %w", err)
			}
			snap[d] = stamp{fi.Size(), fi.ModTime(), fi.Mode()}
		}
	}
	return snap, nil
}

func mkdirAllOwned(root *os.Root, dir string, uid, gid int) error {
	if fi, err := root.Lstat(dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", dir)
		}
		return nil
	}
	if parent := filepath.Dir(dir); parent != "." {
		if err := mkdirAllOwned(root, parent, uid, gid); err != nil {
			return err
		}
	}
	if err := root.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return root.Lchown(dir, uid, gid)
}

// CollectFiles lists what changed in dir since snap: new entries of any kind
// and input files whose size, time or mode changed. Symbolic links are
// reported with their target and never followed; content (up to maxContent
// bytes) is read only from regular files, through an os.Root, so no path can
// lead out of the workspace. At most MaxReportedFiles entries are returned,
// in path order; truncated says there were more.
func CollectFiles(dir string, snap Snapshot, maxContent int64) (files []FileInfo, truncated bool, err error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, false, fmt.Errorf("workspace: %w", err)
	}
	defer root.Close()
	err = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil // vanished while walking
		}
		old, had := snap[p]
		if had && old.size == fi.Size() && old.mtime.Equal(fi.ModTime()) && old.mode == fi.Mode() {
			return nil
		}
		if len(files) >= MaxReportedFiles {
			truncated = true
			return fs.SkipAll
		}
		info := FileInfo{Path: p, Size: fi.Size(), Mode: fi.Mode(), Created: !had}
		switch {
		case fi.Mode().IsRegular():
			info.Kind = KindFile
			if maxContent > 0 {
				info.Content, info.ContentTruncated, err = readContent(root, p, maxContent)
				if err != nil {
					return fmt.Errorf("read %s: %w", p, err)
				}
			}
		case fi.IsDir():
			info.Kind = KindDir
		case fi.Mode()&fs.ModeSymlink != 0:
			info.Kind = KindSymlink
			info.LinkTarget, _ = root.Readlink(p)
		default:
			info.Kind = KindOther
		}
		files = append(files, info)
		return nil
	})
	if err != nil {
		return files, truncated, fmt.Errorf("workspace: %w", err)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, truncated, nil
}

// ReadFile reads the regular file p (as cleaned by CleanPath) of the
// workspace dir, at most max bytes, without following links.
func ReadFile(dir, p string, max int64) ([]byte, bool, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, false, fmt.Errorf("workspace: %w", err)
	}
	defer root.Close()
	fi, err := root.Lstat(p)
	if err != nil {
		return nil, false, fmt.Errorf("workspace: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, false, fmt.Errorf("workspace: %s is a %s, not a regular file", p, kindOf(fi.Mode()))
	}
	return readContent(root, p, max)
}

func kindOf(m fs.FileMode) FileKind {
	switch {
	case m.IsRegular():
		return KindFile
	case m.IsDir():
		return KindDir
	case m&fs.ModeSymlink != 0:
		return KindSymlink
	default:
		return KindOther
	}
}

func readContent(root *os.Root, p string, max int64) ([]byte, bool, error) {
	f, err := root.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	if !fi.Mode().IsRegular() {
		return nil, false, nil
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, false, err
	}
	if int64(len(data)) > max {
		return data[:max], true, nil
	}
	return data, false, nil
}
