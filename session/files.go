package session

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/coderun/coderun/sandbox"
)

// Files streamed in and out of a session's workspace: what a server hands
// its clients without holding a whole file in memory. Both go through the
// sandbox's tar streams (sandbox.Archiver, which every runtime's sandboxes
// implement); a sandbox without them falls back to reading or writing the
// file whole (ReadFile, WriteFile), bounded by the workspace's size.

// ErrChanged is wrapped by the error a File's Read ends with when the file
// changed or vanished while it was read: what was read may mix its old and
// new content, so the last of it is withheld.
var ErrChanged = errors.New("the file changed while it was read")

// File is a regular file of a session's workspace, open for reading
// (OpenFile): its content streams from the workspace as it is read, Size
// bytes and then io.EOF. Close it.
type File struct {
	Path    string
	Size    int64
	Mode    fs.FileMode
	ModTime time.Time

	r     io.Reader // the content
	c     io.Closer
	left  int64
	check func() error // after the content: is the file still the one read?
	err   error
}

// Read reads the file's content. Its last bytes are held back until the
// file is found unchanged since it was opened (its size and modification
// time, as the workspace reports them); otherwise Read fails with an
// error wrapping ErrChanged instead of handing them over.
func (f *File) Read(p []byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	if f.left == 0 {
		f.err = io.EOF
		return 0, io.EOF
	}
	if int64(len(p)) > f.left {
		p = p[:f.left]
	}
	n, err := f.r.Read(p)
	f.left -= int64(n)
	if f.left == 0 && f.check != nil {
		if cerr := f.check(); cerr != nil {
			f.err = cerr
			return 0, cerr
		}
	}
	if err == io.EOF && f.left > 0 {
		err = fmt.Errorf("read %s: %w: the stream ended %d bytes early", f.Path, ErrChanged, f.left)
	}
	if err != nil && err != io.EOF {
		f.err = err
	}
	if f.left == 0 {
		err = nil // EOF on the next call
	}
	return n, err
}

// Close releases what the file holds in the workspace.
func (f *File) Close() error {
	if f.c == nil {
		return nil
	}
	return f.c.Close()
}

// OpenFile opens the regular file path of the workspace for reading, its
// content streamed from the sandbox (links are never followed; a
// directory, a link, a FIFO or a device is an error wrapping
// sandbox.ErrFileKind; a missing file, fs.ErrNotExist; a file larger than
// the workspace holds, sandbox.ErrTooLarge). ctx bounds the whole read.
func (s *Session) OpenFile(ctx context.Context, path string) (*File, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	p, err := sandbox.CleanPath(path)
	if err != nil {
		return nil, err
	}
	ar, ok := s.sb.(sandbox.Archiver)
	if !ok {
		data, truncated, err := s.Download(p, s.cfg.Limits.WorkspaceBytes)
		if err != nil {
			return nil, err
		}
		if truncated {
			return nil, fmt.Errorf("session: download %s: %w: more than the workspace's %s", p, sandbox.ErrTooLarge, sandbox.FormatBytes(s.cfg.Limits.WorkspaceBytes))
		}
		return &File{Path: p, Size: int64(len(data)), Mode: 0o644, r: strings.NewReader(string(data)), left: int64(len(data))}, nil
	}
	hdr, content, closer, err := openArchived(ctx, ar, p)
	if err != nil {
		return nil, fmt.Errorf("session: download %s: %w", p, err)
	}
	s.touch()
	f := &File{Path: p, Size: hdr.Size, Mode: fs.FileMode(hdr.Mode).Perm(), ModTime: hdr.ModTime, r: content, c: closer, left: hdr.Size}
	f.check = func() error {
		again, _, c, err := openArchived(ctx, ar, p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, sandbox.ErrFileKind) {
				return fmt.Errorf("session: download %s: %w: it was removed or replaced", p, ErrChanged)
			}
			return fmt.Errorf("session: download %s: check it after reading: %w", p, err)
		}
		c.Close()
		if again.Size != hdr.Size || !again.ModTime.Equal(hdr.ModTime) {
			return fmt.Errorf("session: download %s: %w: %d bytes modified %s when it was opened, %d bytes modified %s once read",
				p, ErrChanged, hdr.Size, hdr.ModTime.Format(time.RFC3339Nano), again.Size, again.ModTime.Format(time.RFC3339Nano))
		}
		return nil
	}
	return f, nil
}

// openArchived starts the tar stream of the single file p and returns its
// header and content.
func openArchived(ctx context.Context, ar sandbox.Archiver, p string) (*tar.Header, io.Reader, io.Closer, error) {
	rc, err := ar.GetArchive(ctx, []string{p})
	if err != nil {
		return nil, nil, nil, err
	}
	tr := tar.NewReader(rc)
	hdr, err := tr.Next()
	switch {
	case errors.Is(err, io.EOF):
		// Packed nothing: neither a regular file nor a directory.
		rc.Close()
		return nil, nil, nil, fmt.Errorf("%w: %s is not a regular file (a link, a FIFO, a socket or a device)", sandbox.ErrFileKind, p)
	case err != nil:
		rc.Close()
		return nil, nil, nil, err // sandbox.ErrTooLarge past the workspace's size
	}
	if hdr.Typeflag == tar.TypeDir {
		rc.Close()
		return nil, nil, nil, fmt.Errorf("%w: %s is a directory, not a regular file", sandbox.ErrFileKind, p)
	}
	if hdr.Typeflag != tar.TypeReg || strings.TrimSuffix(hdr.Name, "/") != p {
		rc.Close()
		return nil, nil, nil, fmt.Errorf("%w: %s: the workspace packed %q (type %q), not the file", sandbox.ErrFileKind, p, hdr.Name, hdr.Typeflag)
	}
	return hdr, tr, rc, nil
}

// UploadFrom writes the content r holds into the workspace at path, with
// mode, streamed into the sandbox. size is the content's length when the
// caller knows it (a request's Content-Length): r must then hold exactly
// that much. With size < 0 the content is first spooled to an unlinked
// temporary file on the host, at most the workspace's size, so that the
// sandbox is handed a length. Content past the workspace's size is an
// error wrapping sandbox.ErrTooLarge, before anything is written when size
// says so. Content that ends early (a client gone) leaves the file empty,
// never partly written. It returns the content's length.
func (s *Session) UploadFrom(ctx context.Context, path string, r io.Reader, size int64, mode fs.FileMode) (written int64, err error) {
	if err := s.usable(); err != nil {
		return 0, err
	}
	p, err := sandbox.CleanPath(path)
	if err != nil {
		return 0, err
	}
	max := s.cfg.Limits.WorkspaceBytes
	if size > max {
		return 0, fmt.Errorf("session: upload %s: %w: %s, more than the workspace's %s", p, sandbox.ErrTooLarge, sandbox.FormatBytes(size), sandbox.FormatBytes(max))
	}
	ar, ok := s.sb.(sandbox.Archiver)
	if !ok {
		data, err := io.ReadAll(io.LimitReader(r, max+1))
		if err != nil {
			return 0, fmt.Errorf("session: upload %s: %w", p, err)
		}
		if int64(len(data)) > max {
			return 0, fmt.Errorf("session: upload %s: %w: more than the workspace's %s", p, sandbox.ErrTooLarge, sandbox.FormatBytes(max))
		}
		return int64(len(data)), s.Upload(p, data, mode)
	}
	if size < 0 {
		// One spool at a time per session: the host's disk holds at most
		// one workspace's worth for it, however many uploads it sends at
		// once (each would be bounded by the workspace on its own).
		release, err := s.spoolTurn(ctx)
		if err != nil {
			return 0, fmt.Errorf("session: upload %s: wait for the uploads before it: %w", p, err)
		}
		defer release()
		spool, n, err := spoolAtMost(r, max)
		if err != nil {
			return 0, fmt.Errorf("session: upload %s: %w", p, err)
		}
		defer spool.Close()
		r, size = spool, n
	}
	if mode.Perm() == 0 {
		mode = 0o644
	}
	pr, pw := io.Pipe()
	var bodyErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		tw := tar.NewWriter(pw)
		err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: p, Size: size, Mode: int64(mode.Perm()), ModTime: time.Now(), Format: tar.FormatPAX})
		if err == nil {
			src := &readErr{r: r}
			_, err = io.CopyN(tw, src, size)
			switch {
			case src.err != nil && !errors.Is(src.err, io.EOF):
				bodyErr = src.err
			case err != nil && src.n < size && src.err != nil:
				bodyErr = fmt.Errorf("the content ended after %d of its %d bytes", src.n, size)
			}
			if bodyErr != nil {
				err = bodyErr
			}
		}
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
	}()
	err = ar.PutArchive(ctx, pr)
	pr.CloseWithError(errors.New("the workspace stopped reading")) // the writer never blocks past here
	<-done                                                         // nor reads r past here
	if err != nil {
		if bodyErr != nil {
			// What was written is a part of the content: leave none of it.
			if cerr := s.sb.WriteFile(p, nil, mode); cerr != nil {
				return 0, fmt.Errorf("session: upload %s: %w (and emptying what was written of it: %v)", p, bodyErr, cerr)
			}
			return 0, fmt.Errorf("session: upload %s: %w; the file is left empty", p, bodyErr)
		}
		return 0, fmt.Errorf("session: upload %s: %w", p, err)
	}
	s.touch()
	return size, nil
}

// spoolTurn waits for the session's turn to spool an upload.
func (s *Session) spoolTurn(ctx context.Context) (release func(), err error) {
	s.mu.Lock()
	if s.spool == nil {
		s.spool = make(chan struct{}, 1)
	}
	turn := s.spool
	s.mu.Unlock()
	select {
	case turn <- struct{}{}:
		return func() { <-turn }, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// spoolAtMost copies r into an unlinked temporary file, at most max bytes
// (more: an error wrapping sandbox.ErrTooLarge), and returns it rewound.
func spoolAtMost(r io.Reader, max int64) (*os.File, int64, error) {
	f, err := os.CreateTemp("", "coderun-upload-")
	if err != nil {
		return nil, 0, fmt.Errorf("spool: %w", err)
	}
	os.Remove(f.Name()) // gone with its last descriptor
	n, err := io.Copy(f, io.LimitReader(r, max+1))
	if err == nil && n > max {
		err = fmt.Errorf("%w: more than the workspace's %s", sandbox.ErrTooLarge, sandbox.FormatBytes(max))
	}
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, n, nil
}

// readErr is r, keeping the first error a read of it returned.
type readErr struct {
	r   io.Reader
	n   int64
	err error
}

func (e *readErr) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	e.n += int64(n)
	if err != nil && e.err == nil {
		e.err = err
	}
	return n, err
}
