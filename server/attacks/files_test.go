package attacks

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// hostSecret is a file on the host, outside every workspace, that no file
// API may read, and a directory beside it where none may write.
func hostSecret(t *testing.T) (file, dir string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "coderun-attacks-host-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	file = filepath.Join(dir, "secret.txt")
	if err := os.WriteFile(file, []byte("host-secret-7f3a"), 0o644); err != nil {
		t.Fatal(err)
	}
	return file, dir
}

// plant is Python that makes, in the workspace, links and special files
// pointing out of it: at the host's secret file, the host's root, the
// secret's directory, /dev/zero; a FIFO; a 1 TiB sparse file; names with
// a newline and with markup.
func plant(secret, dir string) string {
	return strings.Join([]string{
		"import os",
		"os.symlink(" + pyq(secret) + ", 'secret-link')",
		"os.symlink('/', 'root-link')",
		"os.symlink(" + pyq(dir) + ", 'dir-link')",
		"os.symlink(" + pyq(filepath.Join(dir, "planted.txt")) + ", 'plant-link')",
		"os.symlink('../../../../../../../..' + " + pyq(secret) + ", 'up-link')",
		"os.symlink('/dev/zero', 'zero-link')",
		"os.symlink('/proc/self/environ', 'environ-link')",
		"os.mkfifo('fifo')",
		"f = open('sparse', 'wb')",
		"try: f.truncate(1 << 40)",
		"except OSError: f.truncate(30 << 20)  # the workspace's size bounds a file's (RLIMIT_FSIZE)",
		"f.close()",
		"open('line\\nbreak.txt', 'w').write('x')",
		"open('<img src=x onerror=alert(1)>.html', 'w').write('<script>alert(1)</script>')",
		"print('planted')",
	}, "\n")
}

func pyq(s string) string { return "'" + strings.ReplaceAll(s, "'", "\\'") + "'" }

// TestSessionFilesStayInTheWorkspace: a tenant's code makes links out of
// its workspace (to a host file, to /, to a host directory, to /dev/zero,
// through ../), a FIFO and a 1 TiB sparse file; the tenant then reads and
// writes them through the session file API, as the host does it on the
// code's behalf. Nothing of the host is read or written, the FIFO does not
// hang the request, the sparse file is not handed back as a silently cut
// 200, and the odd names list as they are, escaped in JSON.
func TestSessionFilesStayInTheWorkspace(t *testing.T) {
	secret, dir := hostSecret(t)
	tg := serve(t, mode{})
	id := tg.session(t, aliceKey, nil)
	if c := tg.cell(t, aliceKey, id, plant(secret, dir)); !strings.Contains(mustJSON(t, c), `"planted\n"`) {
		t.Fatalf("plant: %s", mustJSON(t, c))
	}
	files := tg.url + "/v1/sessions/" + id + "/files/"
	for _, p := range []string{
		"secret-link", "root-link" + secret, "dir-link/secret.txt", "up-link", "zero-link", "environ-link",
		"fifo",
		"..%2F..%2F..%2F..%2F..%2F..%2F..%2F.." + url.PathEscape(secret), "%2F" + strings.TrimPrefix(url.PathEscape(secret), "%2F"),
		"a%00b",
	} {
		a := downloadWithin(t, tg, files+p, aliceKey)
		if a.status < 400 || strings.Contains(string(a.body), "host-secret") || strings.Contains(string(a.body), "PATH=") {
			t.Errorf("GET files/%s: %s (want a 4xx, nothing of the host)", p, a)
		}
	}
	for _, p := range []string{"plant-link", "dir-link/planted.txt", "root-link" + filepath.Join(dir, "planted.txt"), "fifo"} {
		a := tg.do(t, req{method: "PUT", url: files + p, key: aliceKey, body: "planted by the tenant"})
		if a.status < 400 {
			t.Errorf("PUT files/%s: %s (want a 4xx)", p, a)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "planted.txt")); err == nil {
		t.Errorf("a tenant wrote %s on the host", filepath.Join(dir, "planted.txt"))
	}
	list := tg.do(t, req{method: "GET", url: tg.url + "/v1/sessions/" + id + "/files", key: aliceKey})
	if list.status != http.StatusOK || !strings.Contains(string(list.body), `line\nbreak.txt`) || strings.Contains(string(list.body), "host-secret") {
		t.Errorf("list: %d %q", list.status, list.body)
	}
	// The session still works after all that.
	if c := tg.cell(t, aliceKey, id, "print(6*7)"); !strings.Contains(mustJSON(t, c), "42") {
		t.Errorf("the session after the attacks: %s", mustJSON(t, c))
	}
}

// TestE2BFilesStayInTheWorkspace: the same links, FIFO and sparse file,
// read and written through E2B's envd: GET/POST /files and the
// filesystem service (stat, list, move, remove through the links).
func TestE2BFilesStayInTheWorkspace(t *testing.T) {
	secret, dir := hostSecret(t)
	tg := serve(t, mode{})
	envd := map[string]string{"X-API-Key": aliceKey, "E2b-Sandbox-Port": "49983"}
	run := tg.do(t, req{method: "POST", url: tg.url + "/execute", body: map[string]any{"code": plant(secret, dir)},
		header: map[string]string{"X-API-Key": aliceKey, "E2b-Sandbox-Port": "49999"}})
	if run.status != http.StatusOK || !strings.Contains(string(run.body), `"planted\n"`) {
		t.Fatalf("plant: %s", run)
	}
	with := func(extra map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range envd {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	for _, p := range []string{"secret-link", "root-link" + secret, "dir-link/secret.txt", "up-link", "zero-link", "environ-link",
		"fifo", "/home/user/../../.." + secret, secret, "/proc/self/environ"} {
		a := downloadWithin(t, tg, tg.url+"/files?path="+url.QueryEscape(p), "", envd)
		if a.status < 400 || strings.Contains(string(a.body), "host-secret") || strings.Contains(string(a.body), "PATH=") {
			t.Errorf("GET /files?path=%s: %s (want a 4xx, nothing of the host)", p, a)
		}
	}
	for _, p := range []string{"plant-link", "dir-link/planted.txt", "root-link" + filepath.Join(dir, "planted.txt"), filepath.Join(dir, "planted.txt")} {
		a := tg.do(t, req{method: "POST", url: tg.url + "/files?path=" + url.QueryEscape(p), body: "planted by the tenant",
			header: with(map[string]string{"Content-Type": "application/octet-stream"})})
		if _, err := os.Stat(filepath.Join(dir, "planted.txt")); err == nil {
			t.Fatalf("POST /files?path=%s: %s: a tenant wrote %s on the host", p, a, filepath.Join(dir, "planted.txt"))
		}
	}
	rpc := func(method, body string) answer {
		return tg.do(t, req{method: "POST", url: tg.url + "/filesystem.Filesystem/" + method, body: body,
			header: with(map[string]string{"Content-Type": "application/json"})})
	}
	for _, c := range []struct{ method, body string }{
		{"Stat", `{"path": "dir-link/secret.txt"}`},
		{"ListDir", `{"path": "dir-link"}`},
		{"ListDir", `{"path": "root-link` + dir + `"}`},
		{"Move", `{"source": "dir-link/secret.txt", "destination": "/home/user/stolen.txt"}`},
		{"Remove", `{"path": "dir-link/secret.txt"}`},
		{"MakeDir", `{"path": "dir-link/made"}`},
	} {
		a := rpc(c.method, c.body)
		if strings.Contains(string(a.body), "secret.txt") && c.method == "ListDir" {
			t.Errorf("%s %s listed the host's directory: %s", c.method, c.body, a)
		}
	}
	if got, err := os.ReadFile(secret); err != nil || string(got) != "host-secret-7f3a" {
		t.Errorf("the host's file after the filesystem calls: %q, %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "made")); err == nil {
		t.Errorf("a tenant made a directory on the host")
	}
	stolen := tg.do(t, req{method: "GET", url: tg.url + "/files?path=/home/user/stolen.txt", header: envd})
	if strings.Contains(string(stolen.body), "host-secret") {
		t.Errorf("moved the host's file in: %s", stolen)
	}
}

// downloadWithin GETs u and fails the test if no answer comes within a
// minute (a FIFO read by the host would block for ever).
func downloadWithin(t *testing.T, tg *target, u, key string, header ...map[string]string) answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, "GET", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		hr.Header.Set("Authorization", "Bearer "+key)
	}
	for _, h := range header {
		for k, v := range h {
			hr.Header.Set(k, v)
		}
	}
	resp, err := tg.client.Do(hr)
	if err != nil {
		t.Fatalf("GET %s: %v (a hang?)", u, err)
	}
	defer resp.Body.Close()
	body := make([]byte, 0, 1024)
	buf := make([]byte, 64<<10)
	for len(body) < 1<<20 {
		n, err := resp.Body.Read(buf)
		body = append(body, buf[:n]...)
		if err != nil {
			break
		}
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: body}
}
