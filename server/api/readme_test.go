package api_test

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeServerExamples runs the README's server examples (the bash
// blocks of its "Server" section before its subsections, each as one
// script) against a running
// server, and checks what they print.
func TestReadmeServerExamples(t *testing.T) {
	h := newHarness(t, nil)
	blocks := readmeBlocks(t, "../../README.md", "## Server", "```bash")
	if len(blocks) == 0 {
		t.Fatal("no bash blocks in the README's Server section")
	}
	host := strings.TrimPrefix(h.url, "http://")
	dir := t.TempDir()
	var out strings.Builder
	for _, b := range blocks {
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", strings.ReplaceAll(b, "localhost:8080", host))
		cmd.Dir = dir
		got, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v:\n%s\n--- script:\n%s", err, got, b)
		}
		out.Write(got)
	}
	text := out.String()
	for _, want := range []string{`"stdout":"42\n"`, "\nok\n", "event: output", `"text":"3.1416\n"`, "event: done",
		"data/in.csv", "a,b\n1,2", "204"} {
		if !strings.Contains(text, want) {
			t.Errorf("the examples' output lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, `"error":`) {
		t.Errorf("an example failed:\n%s", text)
	}
	if _, err := os.Stat(filepath.Join(dir, "session.ipynb")); err != nil {
		t.Errorf("no notebook: %v", err)
	}
}

// readmeBlocks are the fenced blocks opened by fence in the section of
// path whose heading starts with heading, before its first subsection.
func readmeBlocks(t *testing.T, path, heading, fence string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var blocks []string
	var cur *strings.Builder
	inSection := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case cur != nil && strings.HasPrefix(line, "```"):
			blocks = append(blocks, cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(line + "\n")
		case strings.HasPrefix(line, "## "):
			inSection = strings.HasPrefix(line, heading)
		case strings.HasPrefix(line, "### "):
			inSection = false // a subsection: another surface's examples
		case inSection && strings.TrimSpace(line) == fence:
			cur = &strings.Builder{}
		}
	}
	return blocks
}

// TestReadmeServerClaims holds the README's server section to what can be
// seen: a literal ".." segment in a URL gets Go's 307 to the cleaned path
// (the README said 400), /readyz is not claimed to answer 503 while
// shutting down (the listener closes at once), and /v1/exec's
// file_contents says its type.
func TestReadmeServerClaims(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	for _, bad := range []string{"503 while shutting down", "`/readyz` answers 503"} {
		if strings.Contains(readme, bad) {
			t.Errorf("the README says %q", bad)
		}
	}
	for _, want := range []string{"`file_contents` (a size", "Go's router answers 307"} {
		if !strings.Contains(readme, want) {
			t.Errorf("the README does not say %q", want)
		}
	}
	h := newHarness(t, nil)
	s := h.createSession(aliceKey, nil)
	req, _ := http.NewRequest("GET", h.url+"/v1/sessions/"+s.ID+"/files/../x", nil)
	req.Header.Set("Authorization", "Bearer "+aliceKey)
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != 307 || loc != "/v1/sessions/"+s.ID+"/x" {
		t.Errorf("a literal ..: %d Location %q", resp.StatusCode, loc)
	}
}
