package server

import (
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"time"
)

// SendFile answers 200 with a file's content, size bytes read from r, as a
// download named name (Content-Disposition: attachment, the name encoded
// as RFC 2231 asks when it is not plain ASCII, so that no name can add a
// header or a parameter), of type application/octet-stream (never sniffed
// by a browser), with its Content-Length and, when mod is set, its
// Last-Modified. It streams through a 64 KiB buffer. When r fails or ends
// early (a file that changed while it was read), the answer stops short of
// its Content-Length, so that the client sees a broken download rather
// than a wrong one, and SendFile returns why.
func SendFile(w http.ResponseWriter, r io.Reader, size int64, name string, mod time.Time) error {
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.FormatInt(size, 10))
	cd := mime.FormatMediaType("attachment", map[string]string{"filename": name})
	if cd == "" {
		cd = "attachment"
	}
	h.Set("Content-Disposition", cd)
	if !mod.IsZero() {
		h.Set("Last-Modified", mod.UTC().Format(http.TimeFormat))
	}
	w.WriteHeader(http.StatusOK)
	buf := make([]byte, 64<<10)
	var sent int64
	for sent < size {
		n, err := r.Read(buf[:min(int64(len(buf)), size-sent)])
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return fmt.Errorf("send: %w", werr)
			}
			sent += int64(n)
		}
		if err == io.EOF && sent < size {
			return fmt.Errorf("the file ended after %d of its %d bytes", sent, size)
		}
		if err != nil && err != io.EOF {
			return fmt.Errorf("after %d of %d bytes: %w", sent, size, err)
		}
	}
	return nil
}
