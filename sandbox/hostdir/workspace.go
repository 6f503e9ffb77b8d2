package hostdir

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coderun/coderun/sandbox"
)

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
// against after the run. Paths must have passed sandbox.CleanPath. Writing goes
// through an os.Root, so nothing can land outside dir.
func WriteFiles(dir string, files []sandbox.File, uid, gid int) (Snapshot, error) {
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
		p, err := sandbox.CleanPath(f.Path)
		if err != nil {
			return nil, err
		}
		if err := writeFile(root, p, f.Mode, uid, gid, bytes.NewReader(f.Content)); err != nil {
			return nil, fmt.Errorf("workspace: %w", err)
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
		p, _ := sandbox.CleanPath(f.Path) // checked above
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

// writeFile writes what r holds to the file p of root, creating p's parent
// directories, owned by uid:gid with permission bits mode (zero: 0644). An
// existing file is truncated; anything else at p but a regular file (a
// FIFO the sandbox made there, a link) is refused without blocking or
// being followed.
func writeFile(root *os.Root, p string, mode fs.FileMode, uid, gid int, r io.Reader) error {
	if d := filepath.Dir(p); d != "." {
		if err := mkdirAllOwned(root, d, uid, gid); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
	}
	mode = mode.Perm()
	if mode == 0 {
		mode = 0o644
	}
	w, err := root.OpenFile(p, os.O_WRONLY|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, mode)
	if err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	fi, err := w.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%w: %s is in the way: not a regular file", sandbox.ErrFileKind, kindOf(fi.Mode()))
	}
	if err == nil {
		err = w.Truncate(0)
	}
	if err == nil {
		_, err = io.Copy(w, r)
	}
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
		return fmt.Errorf("write %s: %w", p, err)
	}
	return nil
}

func mkdirAllOwned(root *os.Root, dir string, uid, gid int) error {
	if fi, err := root.Lstat(dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%w: %s is not a directory", sandbox.ErrFileKind, dir)
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
// reported with their target and never followed; content is read only from
// regular files, through an os.Root, so no path can lead out of the
// workspace. At most sandbox.MaxReportedFiles entries are returned, in path order;
// truncated says there were more.
//
// Content is bounded so that a run cannot make more come back than its
// workspace holds, whatever sparse files or hard links it made: each file
// gives at most maxContent bytes, all files together at most the size of the
// file system holding dir (see ContentBudget), a sparse file counts at its
// apparent size, and a file with several names (hard links) is read once,
// under the first of its names in path order: the others carry SameFileAs
// and no content. A file cut short by either bound has ContentTruncated set.
func CollectFiles(dir string, snap Snapshot, maxContent int64) (files []sandbox.FileInfo, truncated bool, err error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, false, fmt.Errorf("workspace: %w", err)
	}
	defer root.Close()
	files, truncated, err = changedEntries(root, snap)
	if err != nil {
		return files, truncated, fmt.Errorf("workspace: %w", err)
	}
	if maxContent <= 0 {
		return files, truncated, nil
	}
	budget, err := ContentBudget(root)
	if err != nil {
		return files, truncated, fmt.Errorf("workspace: %w", err)
	}
	if err := readContents(root, files, maxContent, budget); err != nil {
		return files, truncated, fmt.Errorf("workspace: %w", err)
	}
	return files, truncated, nil
}

// Collect fills res's Files, FilesTruncated and Removed from the workspace
// dir after a run given the input files recorded in snap: what
// CollectFiles reports, and the input files snap records that are no
// longer there (see RemovedInputs).
func Collect(res *sandbox.Result, dir string, snap Snapshot, maxContent int64) error {
	var err error
	res.Files, res.FilesTruncated, err = CollectFiles(dir, snap, maxContent)
	if err != nil {
		return err
	}
	res.Removed, err = RemovedInputs(dir, snap)
	return err
}

// RemovedInputs lists, in path order, the input files recorded in snap
// that are no longer in the workspace dir under their path (the
// directories made for them are not listed): gone, or no longer reached
// (a directory on the way replaced by a file, or by a link leading out
// of the workspace, which is never followed). Each is looked up on its
// own, so the answer does not depend on how many entries the run made.
func RemovedInputs(dir string, snap Snapshot) ([]string, error) {
	if len(snap) == 0 {
		return nil, nil
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	defer root.Close()
	var removed []string
	for p, st := range snap {
		if st.mode.IsDir() {
			continue
		}
		if _, err := root.Lstat(p); err != nil {
			removed = append(removed, p)
		}
	}
	sort.Strings(removed)
	return removed, nil
}

// changedEntries walks root and describes, in path order and without
// content, every entry that is not in snap as it was recorded there.
//
// A workspace may hold a million empty files with long names in one
// directory: the walk reads each directory a batch at a time and stops as
// soon as it has more than it reports, so listing costs the host the
// entries it reports (and the directories it has still to read), never the
// whole directory. Directories are read one at a time, breadth first, each
// closed before the next is opened.
func changedEntries(root *os.Root, snap Snapshot) (files []sandbox.FileInfo, truncated bool, err error) {
	dirs := []string{"."}
	for len(dirs) > 0 && !truncated {
		dir := dirs[0]
		dirs = dirs[1:]
		var sub []string
		sub, truncated, err = changedIn(root, dir, snap, &files)
		if err != nil {
			break
		}
		dirs = append(dirs, sub...)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, truncated, err
}

// walkBatch is how many entries of a directory are read at a time.
const walkBatch = 256

// changedIn adds to files the entries of the directory dir that are not
// in snap as recorded there, and returns its subdirectories to walk. It
// stops, truncated, when files would hold more than
// sandbox.MaxReportedFiles. A directory that vanished while walking is
// skipped, as is an entry.
func changedIn(root *os.Root, dir string, snap Snapshot, files *[]sandbox.FileInfo) (sub []string, truncated bool, err error) {
	f, err := root.Open(dir)
	if err != nil {
		if dir != "." && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.ELOOP)) {
			return nil, false, nil // vanished, or swapped for something else, while walking
		}
		return nil, false, err
	}
	defer f.Close()
	for {
		batch, rerr := f.ReadDir(walkBatch)
		for _, d := range batch {
			p := d.Name()
			if dir != "." {
				p = dir + "/" + p
			}
			fi, err := d.Info()
			if err != nil {
				continue // vanished while walking
			}
			if fi.IsDir() {
				sub = append(sub, p)
			}
			old, had := snap[p]
			if had && old.size == fi.Size() && old.mtime.Equal(fi.ModTime()) && old.mode == fi.Mode() {
				continue
			}
			if len(*files) >= sandbox.MaxReportedFiles {
				return nil, true, nil
			}
			info := sandbox.FileInfo{Path: p, Kind: kindOf(fi.Mode()), Size: fi.Size(), Mode: fi.Mode(), Created: !had}
			if info.Kind == sandbox.KindSymlink {
				info.LinkTarget, _ = root.Readlink(p)
			}
			*files = append(*files, info)
		}
		if rerr == io.EOF || (rerr == nil && len(batch) == 0) {
			return sub, false, nil
		}
		if rerr != nil {
			return nil, false, fmt.Errorf("read directory %s: %w", dir, rerr)
		}
	}
}

// readContents fills in the content of the regular files among files, in
// order: at most perFile bytes each and total bytes over all of them. A
// second name of a file already read gets SameFileAs instead of content.
func readContents(root *os.Root, files []sandbox.FileInfo, perFile, total int64) error {
	seen := map[fileID]string{} // a file with several names → the name it was read under
	for i := range files {
		f := &files[i]
		if f.Kind != sandbox.KindFile {
			continue
		}
		err := func() error {
			r, id, err := openRegular(root, f.Path)
			if err != nil || r == nil {
				return err
			}
			defer r.Close()
			if id.nlink > 1 {
				if first, ok := seen[id]; ok {
					f.SameFileAs = first
					return nil
				}
				seen[id] = f.Path
			}
			f.Content, f.ContentTruncated, err = sandbox.ReadAtMost(r, min(perFile, total))
			total -= int64(len(f.Content))
			return err
		}()
		if err != nil {
			return fmt.Errorf("read %s: %w", f.Path, err)
		}
	}
	return nil
}

// ContentBudget is the most content that may be read out of the workspace
// root: the size of the file system that holds it (a run's workspace is a
// file system of its own, sized by Limits.WorkspaceBytes), which is all the
// data a run could honestly have written.
func ContentBudget(root *os.Root) (int64, error) {
	d, err := root.Open(".")
	if err != nil {
		return 0, err
	}
	defer d.Close()
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(d.Fd()), &st); err != nil {
		return 0, fmt.Errorf("statfs: %w", err)
	}
	bsize := st.Frsize
	if bsize <= 0 {
		bsize = st.Bsize
	}
	if st.Blocks > uint64(math.MaxInt64/max(bsize, 1)) {
		return math.MaxInt64, nil
	}
	return int64(st.Blocks) * bsize, nil
}

// ReadFile reads the regular file p (as cleaned by sandbox.CleanPath) of the
// workspace dir, at most max bytes and never more than the workspace's file
// system holds (a sparse file may claim far more), without following links.
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
		return nil, false, fmt.Errorf("workspace: %w: %s is a %s, not a regular file", sandbox.ErrFileKind, p, kindOf(fi.Mode()))
	}
	budget, err := ContentBudget(root)
	if err != nil {
		return nil, false, fmt.Errorf("workspace: %w", err)
	}
	f, _, err := openRegular(root, p)
	if err == nil && f == nil {
		// Swapped, since the Lstat above, for something else (a FIFO, a
		// directory): not the file the caller asked for, nor empty.
		err = errors.New("no longer a regular file: it changed while being read")
	}
	if err != nil {
		return nil, false, fmt.Errorf("workspace: read %s: %w", p, err)
	}
	defer f.Close()
	data, truncated, err := sandbox.ReadAtMost(f, min(max, budget))
	if err != nil {
		return nil, false, fmt.Errorf("workspace: read %s: %w", p, err)
	}
	return data, truncated, nil
}

func kindOf(m fs.FileMode) sandbox.FileKind {
	switch {
	case m.IsRegular():
		return sandbox.KindFile
	case m.IsDir():
		return sandbox.KindDir
	case m&fs.ModeSymlink != 0:
		return sandbox.KindSymlink
	default:
		return sandbox.KindOther
	}
}

// fileID identifies a file whatever its name: two names with the same
// fileID are hard links to one file.
type fileID struct {
	dev, ino uint64
	nlink    uint64 // how many names the file has
}

// openRegular opens the regular file p without following a link and
// without blocking (a FIFO swapped in for the file would otherwise stall
// the host), and says which file it is. It returns a nil file, and no
// error, when p is no longer a regular file.
func openRegular(root *os.Root, p string) (*os.File, fileID, error) {
	f, err := root.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fileID{}, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fileID{}, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fileID{}, nil
	}
	var id fileID
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		id = fileID{dev: uint64(st.Dev), ino: st.Ino, nlink: uint64(st.Nlink)}
	}
	return f, id, nil
}
