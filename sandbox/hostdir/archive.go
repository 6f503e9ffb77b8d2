package hostdir

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"

	"github.com/coderun/coderun/sandbox"
)

// headerCost is what each tar entry counts against the workspace's size,
// whatever its content: the size of a tar header, so that a stream of
// empty entries cannot make files without end.
const headerCost = 512

// PutArchive unpacks the tar stream r into the workspace dir, owned by
// uid:gid (see sandbox.Archiver). Entries are unpacked in order; the first
// one refused ends the stream with an error wrapping sandbox.ErrInvalid
// that names it, and the entries before it stay written. Refused are: a
// path that is absolute, has "..", or names the workspace itself; any
// entry but a regular file or a directory (symbolic and hard links,
// devices, FIFOs); and the entry that would take the bytes unpacked
// (content at its apparent size, a sparse file's holes included, plus a
// header's 512 bytes per entry) past the size of the file system holding
// dir. Writing goes through an os.Root, without following links, so
// nothing lands outside dir whatever the workspace holds.
func PutArchive(ctx context.Context, dir string, r io.Reader, uid, gid int) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("put archive: %w", err)
	}
	defer root.Close()
	budget, err := ContentBudget(root)
	if err != nil {
		return fmt.Errorf("put archive: %w", err)
	}
	tr := tar.NewReader(&ctxReader{ctx: ctx, r: r})
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("put archive: %w", err)
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("put archive: %w", err)
		}
		p, err := sandbox.CleanPath(hdr.Name)
		if err != nil {
			return fmt.Errorf("put archive: entry %q: %w", hdr.Name, err)
		}
		if budget -= headerCost; budget < 0 {
			return refuse(hdr, "the archive has more entries than the workspace's size allows (512 bytes each)")
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := mkdirAllOwned(root, p, uid, gid); err != nil {
				return fmt.Errorf("put archive: %s: %w", p, err)
			}
		case tar.TypeReg, tar.TypeGNUSparse: // Size is a sparse file's apparent size
			if hdr.Size > budget {
				return refuse(hdr, fmt.Sprintf("%s of content pass the workspace's size", sandbox.FormatBytes(hdr.Size)))
			}
			budget -= hdr.Size
			if err := writeFile(root, p, fs.FileMode(hdr.Mode), uid, gid, tr); err != nil {
				return fmt.Errorf("put archive: %w", err)
			}
		default:
			return refuse(hdr, fmt.Sprintf("a %s; only regular files and directories are unpacked", typeName(hdr.Typeflag)))
		}
	}
}

func refuse(hdr *tar.Header, why string) error {
	return fmt.Errorf("put archive: %w: entry %q: %s", sandbox.ErrInvalid, hdr.Name, why)
}

// typeName names a tar entry's type.
func typeName(t byte) string {
	switch t {
	case tar.TypeSymlink:
		return "symbolic link"
	case tar.TypeLink:
		return "hard link"
	case tar.TypeChar:
		return "character device"
	case tar.TypeBlock:
		return "block device"
	case tar.TypeFifo:
		return "FIFO"
	default:
		return fmt.Sprintf("entry of type %q", t)
	}
}

// ctxReader is r, ending with ctx's error once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(b []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(b)
}

// GetArchive packs paths of the workspace dir (each a file or a directory
// with everything under it; none: the whole workspace) as a tar stream
// (see sandbox.Archiver). Only regular files and directories are packed:
// links are not followed, and links, FIFOs, sockets and devices are left
// out. A file with several names is packed once, under the first of them in
// path order; its other names are hard-link entries to it. All content
// together, at apparent size, is at most the size of the file system
// holding dir: past it the stream ends with an error, as it does when ctx
// ends. A path that is malformed or does not exist is an error before
// anything is packed. Closing the reader stops the packing.
func GetArchive(ctx context.Context, dir string, paths []string) (io.ReadCloser, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("get archive: %w", err)
	}
	entries, err := archiveEntries(root, paths)
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("get archive: %w", err)
	}
	budget, err := ContentBudget(root)
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("get archive: %w", err)
	}
	pr, pw := io.Pipe()
	go func() {
		defer root.Close()
		err := pack(ctx, root, entries, budget, pw)
		if err != nil {
			err = fmt.Errorf("get archive: %w", err)
		}
		pw.CloseWithError(err)
	}()
	return pr, nil
}

// archiveEntries lists, in path order and without duplicates, the entries
// under paths (all of root when there are none).
func archiveEntries(root *os.Root, paths []string) ([]string, error) {
	var single []string
	if len(paths) == 0 {
		paths = []string{"."}
	} else {
		cleaned := make([]string, 0, len(paths))
		for _, p := range paths {
			c, err := sandbox.CleanPath(p)
			if err != nil {
				return nil, err
			}
			fi, err := root.Lstat(c)
			if err != nil {
				return nil, err
			}
			if !fi.IsDir() {
				single = append(single, c) // not walked: a link to a directory is not followed
				continue
			}
			cleaned = append(cleaned, c)
		}
		paths = cleaned
	}
	seen := map[string]bool{}
	var out []string
	for _, p := range single {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, p := range paths {
		err := fs.WalkDir(root.FS(), p, func(q string, d fs.DirEntry, err error) error {
			if err != nil {
				if q == p {
					return err
				}
				return nil // vanished while walking
			}
			if q != "." && !seen[q] {
				seen[q] = true
				out = append(out, q)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Strings(out)
	return out, nil
}

// pack writes the tar stream of entries to w.
func pack(ctx context.Context, root *os.Root, entries []string, budget int64, w io.Writer) error {
	tw := tar.NewWriter(w)
	first := map[fileID]string{} // a file with several names → the name it was packed under
	for _, p := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		fi, err := root.Lstat(p)
		if err != nil {
			continue // vanished since it was listed
		}
		switch {
		case fi.IsDir():
			hdr := &tar.Header{Typeflag: tar.TypeDir, Name: p + "/", Mode: int64(fi.Mode().Perm()), ModTime: fi.ModTime(), Format: tar.FormatPAX}
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
		case fi.Mode().IsRegular():
			if err := packFile(ctx, root, tw, p, first, &budget); err != nil {
				return err
			}
		}
	}
	return tw.Close()
}

// packFile writes the regular file p, or a hard-link entry to its first
// name, within budget.
func packFile(ctx context.Context, root *os.Root, tw *tar.Writer, p string, first map[fileID]string, budget *int64) error {
	f, id, err := openRegular(root, p)
	if err != nil || f == nil {
		return nil // vanished or replaced by something else since it was listed
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if id.nlink > 1 {
		if name, ok := first[id]; ok {
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeLink, Name: p, Linkname: name, Mode: int64(fi.Mode().Perm()), ModTime: fi.ModTime(), Format: tar.FormatPAX})
		}
		first[id] = p
	}
	size := fi.Size()
	if size > *budget {
		return fmt.Errorf("%w: %s: %s of content pass the workspace's size (%s left of it)", sandbox.ErrTooLarge, p,
			sandbox.FormatBytes(size), sandbox.FormatBytes(*budget))
	}
	*budget -= size
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: p, Size: size, Mode: int64(fi.Mode().Perm()), ModTime: fi.ModTime(), Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	// The sandbox may change the file meanwhile: exactly size bytes go out,
	// zeros standing in for what it cut.
	n, err := io.Copy(tw, io.LimitReader(&ctxReader{ctx: ctx, r: f}, size))
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	if n < size {
		if _, err := io.CopyN(tw, zeros{}, size-n); err != nil {
			return err
		}
	}
	return nil
}

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(b []byte) (int, error) {
	clear(b)
	return len(b), nil
}
