package attacks

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// bigFile is the size of the files the streaming scenarios move: far more
// than the server may hold for one download.
const bigFile = 200 << 20

// streamMode is a server whose sessions' workspaces hold bigFile.
func streamMode() mode {
	return mode{set: map[string]string{"session.workspace_size": "256MiB", "session.memory": "512MiB"}}
}

// pattern is bigFile bytes of a deterministic, incompressible-enough
// sequence (xorshift), generated as it is read, with its SHA-256 kept.
type pattern struct {
	left  int64
	state uint64
	sum   hash.Hash
}

func newPattern(n int64) *pattern {
	return &pattern{left: n, state: 0x9e3779b97f4a7c15, sum: sha256.New()}
}

func (p *pattern) Read(b []byte) (int, error) {
	if p.left == 0 {
		return 0, io.EOF
	}
	if int64(len(b)) > p.left {
		b = b[:p.left]
	}
	b = b[:len(b)&^7]
	if len(b) == 0 {
		return 0, io.ErrShortBuffer
	}
	for i := 0; i < len(b); i += 8 {
		x := p.state
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		p.state = x
		for j := range 8 {
			b[i+j] = byte(x >> (8 * j))
		}
	}
	p.sum.Write(b)
	p.left -= int64(len(b))
	return len(b), nil
}

func (p *pattern) hex() string { return hex.EncodeToString(p.sum.Sum(nil)) }

// patternSum is the SHA-256 of newPattern(n)'s bytes.
func patternSum(t *testing.T, n int64) string {
	t.Helper()
	p := newPattern(n)
	if _, err := io.Copy(io.Discard, p); err != nil {
		t.Fatal(err)
	}
	return p.hex()
}

// heapWatch samples this process's heap in use (the server runs in it)
// while a transfer runs, and reports how far it grew past where it was.
type heapWatch struct {
	base uint64
	stop chan struct{}
	done chan uint64
}

func watchHeap() *heapWatch {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	h := &heapWatch{base: ms.HeapInuse, stop: make(chan struct{}), done: make(chan uint64, 1)}
	go func() {
		peak := ms.HeapInuse
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-h.stop:
				h.done <- peak
				return
			case <-tick.C:
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				peak = max(peak, m.HeapInuse)
			}
		}
	}()
	return h
}

// growth stops the watch and returns the heap's largest growth seen.
func (h *heapWatch) growth(t *testing.T, what string) int64 {
	close(h.stop)
	g := int64(<-h.done) - int64(h.base)
	t.Logf("%s: the heap grew by %.1f MiB at most", what, float64(g)/(1<<20))
	return g
}

// maxGrowth is how much the heap may grow for a bigFile transfer: its
// buffers, garbage between two collections, the rest of the server.
const maxGrowth = 48 << 20

// TestLargeFilesStreamThroughTheServer: a few tenants moving large files
// at once must not take the host's memory. A 200 MiB file goes up and
// comes back down through coderun's session file API and through E2B's
// envd /files (a raw body of known length, streamed into the workspace;
// a multipart one, whose length is known only once read, spooled to an
// unlinked host file first; downloads streamed from the workspace): each
// transfer grows the server's heap by far less than the file, every byte
// arrives as it was (checked in the sandbox too), and the headers say
// what the file is. An upload is bounded by the workspace's size, not by
// the server's 1 MiB cap on bodies: past it, 413.
func TestLargeFilesStreamThroughTheServer(t *testing.T) {
	tg := serve(t, streamMode())
	want := patternSum(t, bigFile)
	id := tg.session(t, aliceKey, nil)
	files := tg.url + "/v1/sessions/" + id + "/files/"

	// Up, raw, its length known.
	h := watchHeap()
	hr, _ := http.NewRequest("PUT", files+"big.bin", newPattern(bigFile))
	hr.ContentLength = bigFile
	hr.Header.Set("Authorization", "Bearer "+aliceKey)
	up := send(t, tg, hr)
	if g := h.growth(t, "upload"); g > maxGrowth {
		t.Errorf("uploading %d MiB grew the server's heap by %d MiB", bigFile>>20, g>>20)
	}
	if up.status != http.StatusCreated || !strings.Contains(string(up.body), fmt.Sprintf(`"size":%d`, bigFile)) {
		t.Fatalf("upload: %s", up)
	}
	c := tg.cell(t, aliceKey, id, "import hashlib\nh = hashlib.sha256()\nwith open('big.bin', 'rb') as f:\n    for b in iter(lambda: f.read(1 << 20), b''): h.update(b)\nprint(h.hexdigest())")
	if !strings.Contains(mustJSON(t, c), want) {
		t.Errorf("the file in the workspace: %s, want sha256 %s", mustJSON(t, c), want)
	}

	// Down.
	h = watchHeap()
	hr, _ = http.NewRequest("GET", files+"big.bin", nil)
	hr.Header.Set("Authorization", "Bearer "+aliceKey)
	resp, sum, n, err := fetchSum(tg, hr)
	if g := h.growth(t, "download"); g > maxGrowth {
		t.Errorf("downloading %d MiB grew the server's heap by %d MiB", bigFile>>20, g>>20)
	}
	if err != nil || resp.StatusCode != http.StatusOK || n != bigFile || sum != want {
		t.Fatalf("download: %v, %d bytes, sha256 %s, err %v (want %d bytes, %s)", resp.Status, n, sum, err, bigFile, want)
	}
	for k, v := range map[string]string{"Content-Length": fmt.Sprint(bigFile), "Content-Type": "application/octet-stream",
		"Content-Disposition": `attachment; filename=big.bin`, "X-Content-Type-Options": "nosniff"} {
		if got := resp.Header.Get(k); got != v {
			t.Errorf("download: %s: %q, want %q", k, got, v)
		}
	}

	// Past the workspace: refused before anything is read, or once the
	// body passes it (chunked, its length unknown).
	hr, _ = http.NewRequest("PUT", files+"huge.bin", newPattern(300<<20))
	hr.ContentLength = 300 << 20
	hr.Header.Set("Authorization", "Bearer "+aliceKey)
	if a := send(t, tg, hr); a.status != http.StatusRequestEntityTooLarge {
		t.Errorf("a 300 MiB upload into a 256 MiB workspace: %s", a)
	}
	hr, _ = http.NewRequest("PUT", files+"huge.bin", io.MultiReader(newPattern(300<<20)))
	hr.ContentLength = -1
	hr.Header.Set("Authorization", "Bearer "+aliceKey)
	if a, err := tg.tryRequest(hr); err == nil && a.status != http.StatusRequestEntityTooLarge {
		t.Errorf("a chunked 300 MiB upload into a 256 MiB workspace: %s", a)
	}

	// E2B's envd: multipart up (as the SDK's files.write), raw down.
	envd := func(hr *http.Request) {
		hr.Header.Set("X-API-Key", aliceKey)
		hr.Header.Set("E2b-Sandbox-Port", "49983")
	}
	h = watchHeap()
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		part, err := mw.CreateFormFile("file", "/home/user/e2b.bin")
		if err == nil {
			_, err = io.Copy(part, newPattern(bigFile))
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	hr, _ = http.NewRequest("POST", tg.url+"/files", pr)
	hr.Header.Set("Content-Type", mw.FormDataContentType())
	envd(hr)
	up = send(t, tg, hr)
	if g := h.growth(t, "envd upload"); g > maxGrowth {
		t.Errorf("uploading %d MiB through envd grew the server's heap by %d MiB", bigFile>>20, g>>20)
	}
	if up.status != http.StatusOK {
		t.Fatalf("envd upload: %s", up)
	}
	h = watchHeap()
	hr, _ = http.NewRequest("GET", tg.url+"/files?path="+url.QueryEscape("/home/user/e2b.bin"), nil)
	envd(hr)
	resp, sum, n, err = fetchSum(tg, hr)
	if g := h.growth(t, "envd download"); g > maxGrowth {
		t.Errorf("downloading %d MiB through envd grew the server's heap by %d MiB", bigFile>>20, g>>20)
	}
	if err != nil || resp.StatusCode != http.StatusOK || n != bigFile || sum != want {
		t.Fatalf("envd download: %v, %d bytes, sha256 %s, err %v (want %d bytes, %s)", resp.Status, n, sum, err, bigFile, want)
	}
	if got := resp.Header.Get("Content-Length"); got != fmt.Sprint(bigFile) {
		t.Errorf("envd download: Content-Length %q", got)
	}
}

// TestADownloadOfAFileThatChangesBreaks: a file rewritten while it is
// downloaded must not come out as a mix of its old and new content with a
// 200 and a full Content-Length: the download breaks (the body ends
// short), so the client knows.
func TestADownloadOfAFileThatChangesBreaks(t *testing.T) {
	tg := serve(t, streamMode())
	id := tg.session(t, aliceKey, nil)
	tg.cell(t, aliceKey, id, "with open('f.bin', 'wb') as f: f.write(b'a' * (100 << 20))")
	for _, change := range []string{
		"with open('f.bin', 'r+b') as f: f.write(b'b' * (1 << 20))", // same size, new bytes
		"open('f.bin', 'wb').close()",                               // cut to nothing
		"import os; os.remove('f.bin')",                             // gone
	} {
		tg.cell(t, aliceKey, id, "with open('f.bin', 'wb') as f: f.write(b'a' * (100 << 20))")
		hr, _ := http.NewRequest("GET", tg.url+"/v1/sessions/"+id+"/files/f.bin", nil)
		hr.Header.Set("Authorization", "Bearer "+aliceKey)
		resp, err := tg.client.Do(hr)
		if err != nil {
			t.Fatal(err)
		}
		head := make([]byte, 1<<20)
		if _, err := io.ReadFull(resp.Body, head); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %v %v", change, resp.Status, err)
		}
		// The server is held by this reader now; the file changes.
		tg.cell(t, aliceKey, id, change)
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err == nil {
			t.Errorf("%s while downloading: the download completed (%d bytes), want it broken", change, int64(len(head))+n)
		} else if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Logf("%s: %v", change, err)
		}
	}
}

// send does hr and reads its whole answer.
func send(t *testing.T, tg *target, hr *http.Request) answer {
	t.Helper()
	a, err := tg.tryRequest(hr)
	if err != nil {
		t.Fatalf("%s %s: %v", hr.Method, hr.URL, err)
	}
	return a
}

func (tg *target) tryRequest(hr *http.Request) (answer, error) {
	resp, err := tg.client.Do(hr)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return answer{status: resp.StatusCode, header: resp.Header, body: data}, err
}

// fetchSum does hr and hashes its body as it comes, never holding it.
func fetchSum(tg *target, hr *http.Request) (*http.Response, string, int64, error) {
	resp, err := tg.client.Do(hr)
	if err != nil {
		return nil, "", 0, err
	}
	defer resp.Body.Close()
	h := sha256.New()
	n, err := io.Copy(h, resp.Body)
	return resp, hex.EncodeToString(h.Sum(nil)), n, err
}

// TestAnUploadCutShortLeavesNoPartialFile: a client that announces 4 MiB,
// sends 1 MiB and goes away must not leave the first MiB in the workspace
// as if it were the file (code in the sandbox would take it for whole):
// the file is left empty.
func TestAnUploadCutShortLeavesNoPartialFile(t *testing.T) {
	tg := serve(t, mode{})
	id := tg.session(t, aliceKey, nil)
	conn, err := net.Dial("tcp", strings.TrimPrefix(tg.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "PUT /v1/sessions/%s/files/cut.bin HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n", id, aliceKey, 4<<20)
	conn.Write(make([]byte, 1<<20))
	time.Sleep(200 * time.Millisecond)
	conn.Close()
	var size string
	for range 100 { // the server notices the client gone
		c := tg.cell(t, aliceKey, id, "import os\nprint(os.path.getsize('cut.bin') if os.path.exists('cut.bin') else 'none')")
		size = mustJSON(t, c)
		if strings.Contains(size, `"0\n"`) || strings.Contains(size, `"none\n"`) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("after an upload cut short: cut.bin is %s, want empty or absent", size)
}

// throttled is r, at most one read of 256 KiB every 10 ms.
type throttled struct{ r io.Reader }

func (t throttled) Read(b []byte) (int, error) {
	time.Sleep(10 * time.Millisecond)
	if len(b) > 256<<10 {
		b = b[:256<<10]
	}
	return t.r.Read(b)
}

// TestConcurrentUploadsSpoolOneAtATime: an upload whose length is unknown
// until it ends (chunked, or a multipart part as E2B's SDK sends) is
// spooled to the host's disk first, bounded by the workspace's size; but
// 8 such uploads at once into one 32 MiB session spooled 8 workspaces'
// worth (4 uploads here: 4 spools at once), and a tenant sending hundreds would fill the host's disk. A
// session spools one upload at a time (the others wait their turn), and
// each still lands whole.
func TestConcurrentUploadsSpoolOneAtATime(t *testing.T) {
	tg := serve(t, mode{})
	id := tg.session(t, aliceKey, nil)
	stop := make(chan struct{})
	most := make(chan int, 1)
	go func() {
		peak := 0
		for {
			select {
			case <-stop:
				most <- peak
				return
			case <-time.After(5 * time.Millisecond):
			}
			ents, _ := os.ReadDir("/proc/self/fd")
			n := 0
			for _, e := range ents {
				if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.Contains(l, "coderun-upload-") {
					n++
				}
			}
			peak = max(peak, n)
		}
	}()
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hr, _ := http.NewRequest("PUT", tg.url+"/v1/sessions/"+id+"/files/up.bin", throttled{newPattern(8 << 20)})
			hr.ContentLength = -1
			hr.Header.Set("Authorization", "Bearer "+aliceKey)
			if a := send(t, tg, hr); a.status != http.StatusCreated {
				t.Errorf("upload %d: %s", i, a)
			}
		}()
	}
	wg.Wait()
	close(stop)
	if peak := <-most; peak > 1 {
		t.Errorf("4 uploads at once into one session spooled %d at once, want one at a time", peak)
	}
	want := patternSum(t, 8<<20)
	if c := tg.cell(t, aliceKey, id, "import hashlib\nprint(hashlib.sha256(open('up.bin', 'rb').read()).hexdigest())"); !strings.Contains(mustJSON(t, c), want) {
		t.Errorf("up.bin after the uploads: %s", mustJSON(t, c))
	}
}
