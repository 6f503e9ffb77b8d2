package docker

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/docker/docker/api/types/image"
)

// ImagePackages are the Debian packages the image's root holds besides
// the minimal base: Python 3 and the sandbox's Python stack, and Node.
var ImagePackages = []string{
	"python3", "python3-numpy", "python3-pandas", "python3-matplotlib",
	"python3-ipython", "python3-ipykernel", "python3-nbformat", "fonts-dejavu-core",
	// debootstrap installs no provider of a virtual package: python3-zmq
	// (of ipykernel) needs the one python3-cffi-backend provides.
	"python3-cffi-backend",
	"nodejs", // the sandbox's other interpreter (bash is in minbase)
}

// Debootstrap makes a Debian root file system in dir with ImagePackages
// (debootstrap's minbase variant of suite from mirror), writing its
// progress to log. It works in dir+".tmp" and renames it into place only
// when complete, so an interrupted build leaves no half root at dir.
func Debootstrap(ctx context.Context, dir, suite, mirror string, log io.Writer) error {
	if _, err := exec.LookPath("debootstrap"); err != nil {
		return fmt.Errorf("debootstrap is not installed (apt-get install debootstrap): %w", err)
	}
	tmp := dir + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "debootstrap", "--variant=minbase",
		"--include="+strings.Join(ImagePackages, ","), suite, tmp, mirror)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("debootstrap %s into %s: %w", suite, tmp, err)
	}
	return os.Rename(tmp, dir)
}

// Import builds the image tag from the root file system in dir, without a
// registry: dir is packed as a tar stream (devices left out: the engine
// provides /dev) and imported through the Engine API. It returns the
// image's ID.
func Import(ctx context.Context, host, dir, tag string) (string, error) {
	if fi, err := os.Stat(filepath.Join(dir, "usr/bin/python3")); err != nil || fi.IsDir() {
		return "", fmt.Errorf("%s is not a root file system with python3: %v", dir, err)
	}
	return importTar(ctx, host, tag, dir, func(ctx context.Context, w io.Writer) error { return packRoot(ctx, dir, w) })
}

// ImportHost builds the image tag from the host's own packages (NewHostRoot
// of "/" with packages, HostImagePackages when nil) and returns the image's
// ID and what it holds.
func ImportHost(ctx context.Context, host string, packages []string, tag string) (string, *HostRoot, error) {
	if packages == nil {
		packages = HostImagePackages()
	}
	hr, err := NewHostRoot("/", packages, HostExcluded)
	if err != nil {
		return "", nil, err
	}
	id, err := importTar(ctx, host, tag, "the host's packages", func(ctx context.Context, w io.Writer) error { return hr.pack(ctx, w) })
	return id, hr, err
}

// importTar imports the tar stream pack writes as the image tag.
func importTar(ctx context.Context, host, tag, what string, pack func(context.Context, io.Writer) error) (string, error) {
	cli, err := newClient(host)
	if err != nil {
		return "", err
	}
	defer cli.Close()
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(pack(ctx, pw)) }()
	defer pr.Close()
	body, err := cli.ImageImport(ctx, image.ImportSource{Source: pr, SourceName: "-"}, tag, image.ImportOptions{
		Changes: []string{
			"ENV PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin",
			"ENV LANG=C.UTF-8",
			"WORKDIR /work",
			`CMD ["sleep", "infinity"]`,
		},
	})
	if err != nil {
		return "", fmt.Errorf("importing %s as %s: %w", what, tag, err)
	}
	defer body.Close()
	var out struct {
		Status      string `json:"status"`
		ErrorDetail *struct {
			Message string `json:"message"`
		} `json:"errorDetail"`
	}
	dec := json.NewDecoder(body)
	var id string
	for {
		if err := dec.Decode(&out); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return "", fmt.Errorf("reading the import's answer: %w", err)
		}
		if out.ErrorDetail != nil {
			return "", fmt.Errorf("importing %s: %s", what, out.ErrorDetail.Message)
		}
		id = out.Status
	}
	return id, nil
}

// packRoot writes dir as a tar stream to w: regular files, directories,
// symbolic and hard links, with their owners and modes, and the mount
// points the runtime needs.
func packRoot(ctx context.Context, dir string, w io.Writer) error {
	tw := newPacker(w, dir)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		return tw.add(rel)
	})
	if err != nil {
		return fmt.Errorf("packing %s: %w", dir, err)
	}
	return tw.close(nil)
}

// pack writes the host root's paths as a tar stream to w, with the image's
// own /etc/passwd and /etc/group and the mount points the runtime needs.
func (h *HostRoot) pack(ctx context.Context, w io.Writer) error {
	tw := newPacker(w, h.Root)
	for _, p := range h.Paths {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if _, ok := imageEtc[strings.TrimPrefix(p, "/")]; ok {
			continue
		}
		if _, ok := h.Links[p]; ok {
			continue
		}
		if err := tw.add(strings.TrimPrefix(p, "/")); err != nil {
			return fmt.Errorf("packing %s: %w", p, err)
		}
	}
	links := make([]string, 0, len(h.Links))
	for l := range h.Links {
		links = append(links, l)
	}
	sort.Strings(links)
	for _, l := range links {
		hdr := &tar.Header{Typeflag: tar.TypeSymlink, Name: strings.TrimPrefix(l, "/"), Linkname: h.Links[l], Mode: 0o777}
		if err := tw.tw.WriteHeader(hdr); err != nil {
			return err
		}
	}
	return tw.close(imageEtc)
}

// packer writes a root's entries to a tar stream.
type packer struct {
	tw   *tar.Writer
	root string
	seen map[uint64]string // hard links: inode -> first name
	dirs map[string]bool   // directories written
}

func newPacker(w io.Writer, root string) *packer {
	return &packer{tw: tar.NewWriter(w), root: root, seen: map[uint64]string{}, dirs: map[string]bool{}}
}

// add writes the entry rel (relative to the root), as it is: devices,
// FIFOs and sockets are left out (the engine provides /dev).
func (p *packer) add(rel string) error {
	full := filepath.Join(p.root, rel)
	fi, err := os.Lstat(full)
	if err != nil {
		return err
	}
	mode := fi.Mode()
	if mode&(fs.ModeDevice|fs.ModeCharDevice|fs.ModeNamedPipe|fs.ModeSocket) != 0 {
		return nil
	}
	var link string
	if mode&fs.ModeSymlink != 0 {
		if link, err = os.Readlink(full); err != nil {
			return err
		}
	}
	hdr, err := tar.FileInfoHeader(fi, link)
	if err != nil {
		return err
	}
	hdr.Name = filepath.ToSlash(rel)
	if fi.IsDir() {
		hdr.Name += "/"
		p.dirs[filepath.ToSlash(rel)] = true
	}
	hdr.Uname, hdr.Gname = "", ""
	st := fi.Sys().(*syscall.Stat_t)
	hdr.Uid, hdr.Gid = int(st.Uid), int(st.Gid)
	if mode.IsRegular() && st.Nlink > 1 {
		if first, ok := p.seen[st.Ino]; ok {
			hdr.Typeflag, hdr.Linkname, hdr.Size = tar.TypeLink, first, 0
		} else {
			p.seen[st.Ino] = hdr.Name
		}
	}
	if err := p.tw.WriteHeader(hdr); err != nil {
		return err
	}
	if hdr.Typeflag == tar.TypeReg {
		f, err := os.Open(full)
		if err != nil {
			return err
		}
		defer f.Close()
		if _, err := io.Copy(p.tw, io.LimitReader(f, hdr.Size)); err != nil {
			return err
		}
	}
	return nil
}

// close adds files (path relative to the root -> content, mode 0644), the
// directories an image needs whatever its root holds (the runtime's mount
// points among them) that are not there yet, and ends the stream.
func (p *packer) close(files map[string]string) error {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := p.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: n, Mode: 0o644, Size: int64(len(files[n]))}); err != nil {
			return err
		}
		if _, err := io.WriteString(p.tw, files[n]); err != nil {
			return err
		}
	}
	for _, d := range []struct {
		name string
		mode int64
	}{
		{"work", 0o755}, {strings.TrimPrefix(codeDir, "/"), 0o755}, {"tmp", 0o1777}, {"var/tmp", 0o1777},
		{"proc", 0o555}, {"sys", 0o555}, {"dev", 0o755}, {"run", 0o755}, {"root", 0o700}, {"home", 0o755},
	} {
		if p.dirs[d.name] {
			continue
		}
		if err := p.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d.name + "/", Mode: d.mode}); err != nil {
			return err
		}
	}
	return p.tw.Close()
}
