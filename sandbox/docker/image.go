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
	cli, err := newClient(host)
	if err != nil {
		return "", err
	}
	defer cli.Close()
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(packRoot(ctx, dir, pw)) }()
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
		return "", fmt.Errorf("importing %s as %s: %w", dir, tag, err)
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
			return "", fmt.Errorf("importing %s: %s", dir, out.ErrorDetail.Message)
		}
		id = out.Status
	}
	return id, nil
}

// packRoot writes dir as a tar stream to w: regular files, directories,
// symbolic and hard links, with their owners and modes, and the mount
// points /work and /.coderun the runtime binds into every container.
func packRoot(ctx context.Context, dir string, w io.Writer) error {
	tw := tar.NewWriter(w)
	seen := map[uint64]string{}
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
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		mode := fi.Mode()
		if mode&(fs.ModeDevice|fs.ModeCharDevice|fs.ModeNamedPipe|fs.ModeSocket) != 0 {
			return nil
		}
		var link string
		if mode&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		hdr.Uname, hdr.Gname = "", ""
		st := fi.Sys().(*syscall.Stat_t)
		hdr.Uid, hdr.Gid = int(st.Uid), int(st.Gid)
		if mode.IsRegular() && st.Nlink > 1 {
			if first, ok := seen[st.Ino]; ok {
				hdr.Typeflag, hdr.Linkname, hdr.Size = tar.TypeLink, first, 0
			} else {
				seen[st.Ino] = hdr.Name
			}
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if hdr.Typeflag == tar.TypeReg {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			_, err = io.Copy(tw, f)
			f.Close()
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("packing %s: %w", dir, err)
	}
	for _, mp := range []string{"work", strings.TrimPrefix(codeDir, "/")} {
		if _, err := os.Lstat(filepath.Join(dir, mp)); err == nil {
			continue
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: mp + "/", Mode: 0o755}); err != nil {
			return err
		}
	}
	return tw.Close()
}
