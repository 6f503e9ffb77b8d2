package attacks

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
)

// TestFetchFilesCannotAmplify: SandboxFusion's fetch_files names files to
// hand back, base64, keyed by the name as given. A tenant writes one 1
// MiB file and a hard link to it, then asks for it under 40 names that
// all mean it ("big", "./big", "big/", ".//big", the link...): each would
// be its own copy in the answer, so a 32 MiB request body of aliases of a
// 16 MiB file would have the server build terabytes. What comes back
// together is bounded by the workspace's size (32 MiB here): past it the
// answer is a SandboxError saying so, on /run_code and /run_jupyter.
func TestFetchFilesCannotAmplify(t *testing.T) {
	tg := serve(t, mode{})
	code := "import os\nopen('big', 'wb').write(os.urandom(1 << 20))\nos.link('big', 'link')\nprint('written')"
	var names []string
	for i := range 40 {
		switch i % 4 {
		case 0:
			names = append(names, strings.Repeat("./", i)+"big")
		case 1:
			names = append(names, "big"+strings.Repeat("/", i))
		case 2:
			names = append(names, strings.Repeat(".//", i)+"link")
		default:
			names = append(names, "."+strings.Repeat("/", i)+"big")
		}
	}
	for _, route := range []string{"/run_code", "/run_jupyter"} {
		body := map[string]any{"code": code, "language": "python", "fetch_files": names}
		if route == "/run_jupyter" {
			body = map[string]any{"cells": []string{code}, "fetch_files": names}
		}
		a := tg.do(t, req{method: "POST", url: tg.url + route, key: aliceKey, body: body})
		var res struct {
			Status  string            `json:"status"`
			Message string            `json:"message"`
			Files   map[string]string `json:"files"`
		}
		a.json(t, &res)
		total := 0
		for _, v := range res.Files {
			b, _ := base64.StdEncoding.DecodeString(v)
			total += len(b)
		}
		if total > 32<<20 || a.status != http.StatusOK {
			t.Errorf("%s: %d, status %s, %d files, %d bytes together (a 32 MiB workspace): %s", route, a.status, res.Status, len(res.Files), total, res.Message)
		}
		if res.Status != "SandboxError" || !strings.Contains(res.Message, "fetch_files") {
			t.Errorf("%s: status %s %q, want a SandboxError saying fetch_files asks too much", route, res.Status, res.Message)
		}
		// A few names of a file are the client's to ask for.
		body["fetch_files"] = []string{"big", "./big", "link"}
		a = tg.do(t, req{method: "POST", url: tg.url + route, key: aliceKey, body: body})
		res.Files = nil
		a.json(t, &res)
		if res.Status != "Success" || len(res.Files) != 3 {
			t.Errorf("%s with three names: %s %q, %d files", route, res.Status, res.Message, len(res.Files))
		}
	}
}
