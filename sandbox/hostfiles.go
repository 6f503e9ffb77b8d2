package sandbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"syscall"
)

// Files cross to the host in two places: a run's results saved into a host
// directory (SaveFiles), and host files uploaded into a workspace
// (ReadUpload). Both treat what they handle as hostile: results come from
// the sandbox, and the files a caller uploads may be what an earlier run
// left behind or what a model chose.

// ErrTooLarge is wrapped by ReadUpload's error for a file larger than allowed.
var ErrTooLarge = errors.New("file too large")

// SaveReport says what SaveFiles did with the entries it was given. Paths
// are relative to the directory saved into.
type SaveReport struct {
	Saved   []string  // regular files written
	Linked  []string  // second names of a file, made hard links to its first name
	Dirs    []string  // directories made
	Skipped []Skipped // entries deliberately not recreated on the host
	Bytes   int64     // content bytes written (holes of sparse files included)
}

// Skipped is an entry that SaveFiles did not recreate, and why.
type Skipped struct {
	Path string
	Why  string
}

// SaveFiles recreates a run's files (Result.Files, read with content) under
// dir, which must exist. Paths are checked again and written through an
// os.Root, so nothing lands outside dir. Only regular files and directories
// are made:
//
//   - a symbolic link is never recreated (a link to /etc/passwd saved on the
//     host would hand the host's file to whoever reads or uploads it
//     later): it is listed in Skipped with its target, as are FIFOs,
//     sockets and devices;
//   - a file that came back truncated, or without content, is not saved (a
//     cut file is not the file): it is named in the error;
//   - at most limit bytes of content are written, all files together: the
//     first file that would pass the limit, and every later one, is not
//     saved and is named in the error;
//   - a second name of a file (FileInfo.SameFileAs) becomes a hard link to
//     the first within dir, which writes nothing more;
//   - blocks of zeros are left as holes, so a sparse file stays sparse.
//
// An existing entry in the way of a file is replaced; a directory in the
// way is an error. The error lists every entry that could not be saved.
func SaveFiles(dir string, files []FileInfo, limit int64) (SaveReport, error) {
	var rep SaveReport
	root, err := os.OpenRoot(dir)
	if err != nil {
		return rep, fmt.Errorf("save files: %w", err)
	}
	defer root.Close()
	s := &saver{root: root, left: limit, limit: limit, saved: map[string]bool{}}
	for _, f := range files {
		if f.Kind == KindFile && f.SameFileAs != "" {
			continue // once the file's first name is saved
		}
		s.save(f)
	}
	for _, f := range files {
		if f.Kind == KindFile && f.SameFileAs != "" {
			s.save(f)
		}
	}
	return s.rep, errors.Join(s.errs...)
}

// saver is the state of one SaveFiles call.
type saver struct {
	root        *os.Root
	left, limit int64           // content bytes still allowed; all allowed
	full        bool            // a file passed the limit: no later one is saved
	saved       map[string]bool // regular files written, by cleaned path
	rep         SaveReport
	errs        []error
}

func (s *saver) fail(p string, format string, args ...any) {
	s.errs = append(s.errs, fmt.Errorf("%s: %s", p, fmt.Sprintf(format, args...)))
}

// save recreates one entry.
func (s *saver) save(f FileInfo) {
	p, err := CleanPath(f.Path)
	if err != nil {
		s.errs = append(s.errs, err)
		return
	}
	switch f.Kind {
	case KindDir:
		if err := s.root.MkdirAll(p, 0o755); err != nil {
			s.fail(p, "%v", err)
			return
		}
		s.rep.Dirs = append(s.rep.Dirs, p)
	case KindFile:
		if f.SameFileAs != "" {
			s.link(p, f.SameFileAs)
		} else {
			s.write(p, f)
		}
	case KindSymlink:
		s.rep.Skipped = append(s.rep.Skipped, Skipped{p, fmt.Sprintf("a symbolic link (to %q); links are not recreated", f.LinkTarget)})
	default:
		s.rep.Skipped = append(s.rep.Skipped, Skipped{p, "not a regular file or directory"})
	}
}

// write saves the regular file f at p, within the byte limit.
func (s *saver) write(p string, f FileInfo) {
	n := int64(len(f.Content))
	switch {
	case f.ContentTruncated:
		s.fail(p, "not saved: the file is %s and only %s of it came back (the limit on returned content)",
			FormatBytes(f.Size), FormatBytes(n))
		return
	case f.Content == nil && f.Size > 0:
		s.fail(p, "not saved: its content did not come back")
		return
	case s.full:
		s.fail(p, "not saved: the limit of %s on the bytes saved was reached", FormatBytes(s.limit))
		return
	case n > s.left:
		s.fail(p, "not saved: %s more would pass the limit of %s on the bytes saved", FormatBytes(n), FormatBytes(s.limit))
		s.full = true // what is saved is a prefix of the list
		return
	}
	if err := s.clear(p); err != nil {
		s.fail(p, "%v", err)
		return
	}
	w, err := s.root.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, f.Mode.Perm()|0o200)
	if err != nil {
		s.fail(p, "%v", err)
		return
	}
	err = writeSparse(w, f.Content)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		s.fail(p, "%v", err)
		return
	}
	s.left -= n
	s.rep.Bytes += n
	s.saved[p] = true
	s.rep.Saved = append(s.rep.Saved, p)
}

// link makes p a hard link to first, a file saved before.
func (s *saver) link(p, first string) {
	first, err := CleanPath(first)
	if err != nil || !s.saved[first] {
		s.fail(p, "not saved: the same file as %s, which was not saved", first)
		return
	}
	if err := s.clear(p); err != nil {
		s.fail(p, "%v", err)
		return
	}
	if err := s.root.Link(first, p); err != nil {
		s.fail(p, "%v", err)
		return
	}
	s.rep.Linked = append(s.rep.Linked, p)
}

// clear makes way for a new file at p: it creates p's parent directories
// and removes what is at p, unless that is a directory.
func (s *saver) clear(p string) error {
	if d := filepath.Dir(p); d != "." {
		if err := s.root.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	fi, err := s.root.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case fi.IsDir():
		return fmt.Errorf("a directory is in the way")
	}
	return s.root.Remove(p)
}

// holeSize is the unit writeSparse skips when it is all zeros.
const holeSize = 4096

// writeSparse writes data to the new, empty file w, leaving every
// holeSize-aligned block of zeros as a hole.
func writeSparse(w *os.File, data []byte) error {
	for off := 0; off < len(data); {
		end := min(off+holeSize, len(data))
		if isZero(data[off:end]) {
			off = end
			continue
		}
		for end < len(data) && !isZero(data[end:min(end+holeSize, len(data))]) {
			end = min(end+holeSize, len(data))
		}
		if _, err := w.WriteAt(data[off:end], int64(off)); err != nil {
			return err
		}
		off = end
	}
	return w.Truncate(int64(len(data)))
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// ReadUpload reads the host file path to upload into a workspace, at most
// max bytes (more is an error wrapping ErrTooLarge: uploads are never
// truncated), and returns its content and permission bits. Only a regular
// file is read: a directory, FIFO, socket or device is refused without
// being read (a FIFO or /dev/zero would hang or never end). path's last
// component may be a symbolic link only if it resolves within the
// directory that holds it (data.csv → data-v2.csv); a link that leads out
// of it (a link to /etc/passwd an earlier run left behind) is refused,
// naming its target: to upload that file, name it.
func ReadUpload(path string, max int64) ([]byte, fs.FileMode, error) {
	dir, name := filepath.Split(filepath.Clean(path))
	if dir == "" {
		dir = "."
	}
	if name == "" || name == "." || name == ".." {
		return nil, 0, fmt.Errorf("%s is a directory, not a regular file", path)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, 0, err
	}
	defer root.Close()
	// Look before opening: opening a device can act on it.
	fi, err := root.Stat(name)
	if err != nil {
		return nil, 0, uploadOpenError(root, path, name, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("%s is %s, not a regular file", path, describeMode(fi.Mode()))
	}
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, 0, uploadOpenError(root, path, name, err)
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, 0, err
	}
	if !fi.Mode().IsRegular() { // swapped since it was looked at
		return nil, 0, fmt.Errorf("%s is %s, not a regular file", path, describeMode(fi.Mode()))
	}
	data, truncated, err := ReadAtMost(f, max)
	if err != nil {
		return nil, 0, fmt.Errorf("read %s: %w", path, err)
	}
	if truncated {
		return nil, 0, fmt.Errorf("%s: %w: more than %s", path, ErrTooLarge, FormatBytes(max))
	}
	return data, fi.Mode().Perm(), nil
}

// uploadOpenError explains why name (path as the caller gave it) could not
// be opened in root: a link that leads out of its directory is named as
// such.
func uploadOpenError(root *os.Root, path, name string, err error) error {
	var pe *fs.PathError
	if errors.Is(err, fs.ErrNotExist) && errors.As(err, &pe) {
		return &fs.PathError{Op: "open", Path: path, Err: pe.Err}
	}
	if fi, lerr := root.Lstat(name); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
		target, _ := root.Readlink(name)
		return fmt.Errorf("%s is a symbolic link to %q, which leads out of its directory: a link is followed only "+
			"within the directory that holds it; to upload the file it points to, name that file", path, target)
	}
	return err
}

// describeMode names the kind of a file that is not a regular one.
func describeMode(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	default:
		return "not a regular file"
	}
}

// ReadAtMost reads r to its end or to max bytes; truncated says there was
// more (a file of exactly max bytes is not truncated).
func ReadAtMost(r io.Reader, max int64) (data []byte, truncated bool, err error) {
	if max < 0 {
		max = 0
	}
	n := max
	if n < math.MaxInt64 {
		n++ // one byte more tells a file of exactly max bytes from a longer one
	}
	data, err = io.ReadAll(io.LimitReader(r, n))
	if err != nil {
		return nil, false, err
	}
	if int64(len(data)) > max {
		return data[:max], true, nil
	}
	return data, false, nil
}
