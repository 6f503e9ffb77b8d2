//go:build linux

package sandboxtest

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
)

// TarEntry is an entry of a tar stream to build: its header and, for a
// regular file, its content (Size is set from it).
type TarEntry struct {
	Header  tar.Header
	Content string
}

// TarFile is a regular file entry.
func TarFile(name, content string, mode int64) TarEntry {
	return TarEntry{tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode}, content}
}

// Tar builds a tar stream of entries, written as given: hostile names,
// links and devices included.
func Tar(entries ...TarEntry) ([]byte, error) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range entries {
		hdr := e.Header
		if hdr.Typeflag == tar.TypeReg {
			hdr.Size = int64(len(e.Content))
		}
		if err := tw.WriteHeader(&hdr); err != nil {
			return nil, fmt.Errorf("tar entry %s: %w", hdr.Name, err)
		}
		if _, err := io.WriteString(tw, e.Content); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// SparseTar is a tar stream of one old-GNU sparse file: 4 bytes of data
// that claim to be a file of apparent size bytes, the way an archive asks a
// receiver to make a file far larger than itself. archive/tar writes no
// sparse files, so the header is made by hand.
func SparseTar(name string, size int64) []byte {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: 4, Mode: 0o644, Format: tar.FormatGNU})
	_, _ = io.WriteString(tw, "data")
	_ = tw.Close()
	raw := b.Bytes()
	h := raw[:512]
	h[156] = tar.TypeGNUSparse
	number := func(field []byte, v int64) {
		if s := fmt.Sprintf("%0*o", len(field)-1, v); len(s) < len(field) {
			copy(field, s)
			field[len(field)-1] = 0
			return
		}
		clear(field) // too large for octal digits: base-256, as GNU tar writes it
		field[0] = 0x80
		for i := len(field) - 1; i > 0 && v > 0; i-- {
			field[i] = byte(v)
			v >>= 8
		}
	}
	number(h[386:398], 0)    // the one data fragment: at offset 0
	number(h[398:410], 4)    // of 4 bytes
	h[482] = 0               // no extended sparse headers
	number(h[483:495], size) // the apparent size
	copy(h[148:156], "        ")
	var sum int64
	for _, c := range h {
		sum += int64(c)
	}
	copy(h[148:156], fmt.Sprintf("%06o\x00 ", sum))
	return raw
}
