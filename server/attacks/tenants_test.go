package attacks

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestTenantsReachNothingOfEachOther: alice, with her own valid key, knows
// the id of bob's session (a leaked log line, a guess) and tries every
// route that takes it: read it, run a cell in it, read, write and list its
// files, export it, interrupt, restart and delete it. Each answers as for
// an id that does not exist (404), and bob's session is unchanged; alice's
// lists show nothing of bob's.
func TestTenantsReachNothingOfEachOther(t *testing.T) {
	tg := serve(t, mode{})
	bob := tg.session(t, bobKey, nil)
	tg.cell(t, bobKey, bob, "secret = 'bob-secret-42'\nopen('notes.txt', 'w').write(secret)")
	base := tg.url + "/v1/sessions/" + bob
	for _, r := range []req{
		{method: "GET", url: base},
		{method: "GET", url: base + "/cells"},
		{method: "GET", url: base + "/files"},
		{method: "GET", url: base + "/files/notes.txt"},
		{method: "GET", url: base + "/notebook"},
		{method: "POST", url: base + "/execute", body: map[string]any{"code": "print(secret)"}},
		{method: "PUT", url: base + "/files/notes.txt", body: "overwritten by alice"},
		{method: "POST", url: base + "/interrupt"},
		{method: "POST", url: base + "/restart"},
		{method: "DELETE", url: base},
	} {
		r.key = aliceKey
		a := tg.do(t, r)
		if a.status != http.StatusNotFound || strings.Contains(string(a.body), "bob-secret") {
			t.Errorf("alice: %s %s: %s (want 404)", r.method, strings.TrimPrefix(r.url, tg.url), a)
		}
	}
	// Without a key, with an unknown one, with a key's prefix: 401.
	for _, key := range []string{"", "nobody-0123456789abcdef", bobKey[:len(bobKey)-1], bobKey + "x", strings.ToUpper(bobKey)} {
		a := tg.do(t, req{method: "GET", url: base + "/files/notes.txt", key: key})
		if a.status != http.StatusUnauthorized {
			t.Errorf("key %q: %s (want 401)", key, a)
		}
	}
	var list struct {
		Sessions []map[string]any `json:"sessions"`
	}
	tg.do(t, req{method: "GET", url: tg.url + "/v1/sessions", key: aliceKey}).json(t, &list)
	if len(list.Sessions) != 0 {
		t.Errorf("alice lists sessions %v", list.Sessions)
	}
	c := tg.cell(t, bobKey, bob, "print(secret, open('notes.txt').read())")
	if s := mustJSON(t, c); !strings.Contains(s, "bob-secret-42 bob-secret-42") {
		t.Errorf("bob's session changed under alice's attempts: %s", s)
	}
}

// TestIDsAreNotGuessable: ids that stand for capabilities (a session's, a
// job's, an E2B sandbox's and its access token) are long random strings,
// not counters or timestamps: two made one after the other share no long
// prefix.
func TestIDsAreNotGuessable(t *testing.T) {
	tg := serve(t, mode{})
	var ids [][2]string
	ids = append(ids, [2]string{tg.session(t, aliceKey, nil), tg.session(t, aliceKey, nil)})
	var jobs [2]string
	for i := range jobs {
		a := tg.do(t, req{method: "POST", url: tg.url + "/v1/jobs", key: aliceKey,
			body: map[string]any{"problems": `{"id": "x", "code": "def f(): return 1", "test": "assert f() == 1"}` + "\n"}})
		if a.status != http.StatusAccepted && a.status != http.StatusCreated && a.status != http.StatusOK {
			t.Fatalf("submit a job: %s", a)
		}
		var j struct {
			ID string `json:"id"`
		}
		a.json(t, &j)
		jobs[i] = j.ID
	}
	ids = append(ids, jobs)
	var boxes, tokens [2]string
	for i := range boxes {
		a := tg.do(t, req{method: "POST", url: tg.url + "/sandboxes", header: map[string]string{"X-API-Key": aliceKey},
			body: map[string]any{"templateID": "code-interpreter-v1"}})
		if a.status != http.StatusCreated {
			t.Fatalf("create an E2B sandbox: %s", a)
		}
		var b struct {
			ID    string `json:"sandboxID"`
			Token string `json:"envdAccessToken"`
		}
		a.json(t, &b)
		boxes[i], tokens[i] = b.ID, b.Token
	}
	ids = append(ids, boxes, tokens)
	for _, pair := range ids {
		a, b := pair[0], pair[1]
		common := 0
		for common < len(a) && common < len(b) && a[common] == b[common] {
			common++
		}
		if len(a) < 16 || common > len(a)-12 {
			t.Errorf("ids %q and %q: guessable (%d characters, %d in common at the start)", a, b, len(a), common)
		}
	}
}

// TestE2BSandboxesAreTheirTenants: alice knows the id of bob's E2B
// sandbox. With her own API key, as E2b-Sandbox-Id, on the interpreter
// and envd (main listener and debug listeners), she reaches nothing of
// it: not its files, not its interpreter, not its processes; with a made
// up access token neither; the control plane does not list, get, connect,
// time out or kill it for her.
func TestE2BSandboxesAreTheirTenants(t *testing.T) {
	tg := serve(t, mode{})
	a := tg.do(t, req{method: "POST", url: tg.url + "/sandboxes", header: map[string]string{"X-API-Key": bobKey},
		body: map[string]any{"templateID": "code-interpreter-v1"}})
	if a.status != http.StatusCreated {
		t.Fatalf("bob creates a sandbox: %s", a)
	}
	var box struct {
		ID    string `json:"sandboxID"`
		Token string `json:"envdAccessToken"`
	}
	a.json(t, &box)
	write := tg.do(t, req{method: "POST", url: tg.url + "/files?path=/home/user/bob.txt", body: "bob-secret-42",
		header: map[string]string{"E2b-Sandbox-Id": box.ID, "E2b-Sandbox-Port": "49983", "X-Access-Token": box.Token, "Content-Type": "application/octet-stream"}})
	if write.status != http.StatusOK {
		t.Fatalf("bob writes a file: %s", write)
	}
	for _, creds := range []map[string]string{
		{"X-API-Key": aliceKey},
		{"Authorization": "Bearer " + aliceKey},
		{"X-Access-Token": "0123456789abcdef0123456789abcdef"},
		{"E2B-Traffic-Access-Token": "0123456789abcdef0123456789abcdef"},
		{"X-Access-Token": box.Token[:len(box.Token)-1]},
	} {
		for _, base := range []string{tg.url, tg.interp, tg.envd} {
			for _, r := range []req{
				{method: "GET", url: base + "/files?path=/home/user/bob.txt", header: map[string]string{"E2b-Sandbox-Port": "49983"}},
				{method: "POST", url: base + "/files?path=/home/user/evil.txt", body: "alice", header: map[string]string{"E2b-Sandbox-Port": "49983", "Content-Type": "application/octet-stream"}},
				{method: "POST", url: base + "/filesystem.Filesystem/ListDir", body: `{"path": "/home/user"}`, header: map[string]string{"E2b-Sandbox-Port": "49983", "Content-Type": "application/json"}},
				{method: "POST", url: base + "/execute", body: map[string]any{"code": "print(open('bob.txt').read())"}, header: map[string]string{"E2b-Sandbox-Port": "49999"}},
				{method: "GET", url: base + "/contexts", header: map[string]string{"E2b-Sandbox-Port": "49999"}},
			} {
				for k, v := range creds {
					r.header[k] = v
				}
				r.header["E2b-Sandbox-Id"] = box.ID
				ans := tg.do(t, r)
				if ans.status < 400 || strings.Contains(string(ans.body), "bob-secret") {
					t.Errorf("%v: %s %s: %s", creds, r.method, strings.TrimPrefix(r.url, "http://"), ans)
				}
			}
		}
	}
	alice := map[string]string{"X-API-Key": aliceKey}
	for _, r := range []req{
		{method: "GET", url: tg.url + "/sandboxes/" + box.ID},
		{method: "POST", url: tg.url + "/v2/sandboxes/" + box.ID + "/connect", body: map[string]any{"timeout": 60}},
		{method: "POST", url: tg.url + "/sandboxes/" + box.ID + "/timeout", body: map[string]any{"timeout": 1}},
		{method: "DELETE", url: tg.url + "/sandboxes/" + box.ID},
	} {
		r.header = alice
		if ans := tg.do(t, r); ans.status != http.StatusNotFound || strings.Contains(string(ans.body), box.Token) {
			t.Errorf("alice: %s %s: %s (want 404)", r.method, strings.TrimPrefix(r.url, tg.url), ans)
		}
	}
	list := tg.do(t, req{method: "GET", url: tg.url + "/v2/sandboxes", header: alice})
	if list.status != http.StatusOK || strings.Contains(string(list.body), box.ID) {
		t.Errorf("alice lists: %s", list)
	}
	read := tg.do(t, req{method: "GET", url: tg.url + "/files?path=/home/user/bob.txt",
		header: map[string]string{"E2b-Sandbox-Id": box.ID, "E2b-Sandbox-Port": "49983", "X-Access-Token": box.Token}})
	if read.status != http.StatusOK || string(read.body) != "bob-secret-42" {
		t.Errorf("bob reads his file back: %s", read)
	}
}

// TestJobsAreTheirTenants: bob's eval job (its problems may be a private
// benchmark) is not reachable by alice: not its view, events, verdicts,
// summary, nor cancel; alice's list does not show it.
func TestJobsAreTheirTenants(t *testing.T) {
	tg := serve(t, mode{})
	a := tg.do(t, req{method: "POST", url: tg.url + "/v1/jobs", key: bobKey,
		body: map[string]any{"problems": `{"id": "bob-private-item", "code": "def f(): return 1", "test": "assert f() == 1"}` + "\n"}})
	if a.status >= 300 {
		t.Fatalf("bob submits a job: %s", a)
	}
	var j struct {
		ID string `json:"id"`
	}
	a.json(t, &j)
	base := tg.url + "/v1/jobs/" + j.ID
	for _, r := range []req{
		{method: "GET", url: base}, {method: "GET", url: base + "/events"}, {method: "GET", url: base + "/verdicts"},
		{method: "GET", url: base + "/summary"}, {method: "POST", url: base + "/cancel"},
	} {
		r.key = aliceKey
		if ans := tg.do(t, r); ans.status != http.StatusNotFound || strings.Contains(string(ans.body), "bob-private") {
			t.Errorf("alice: %s %s: %s (want 404)", r.method, strings.TrimPrefix(r.url, tg.url), ans)
		}
	}
	list := tg.do(t, req{method: "GET", url: tg.url + "/v1/jobs", key: aliceKey})
	if list.status != http.StatusOK || strings.Contains(string(list.body), j.ID) {
		t.Errorf("alice lists jobs: %s", list)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPooledSandboxesCarryNothingBetweenTenants: with the pools `coderun
// serve` starts by default (pre-started sandboxes for one-shot runs,
// started Python sessions), alice leaves marks everywhere a later
// sandbox could see them — workspace, /tmp, /dev/shm, a process that
// outlives her run, an environment variable, a module patched in her
// session — and bob's runs and sessions, served from the same pools
// right after, find none of them.
func TestPooledSandboxesCarryNothingBetweenTenants(t *testing.T) {
	tg := serve(t, mode{set: map[string]string{"runtime.linux.pool": "2", "server.session_pool": "2"}})
	leave := `import os, subprocess
for d in ('.', '/tmp', '/dev/shm'):
    open(os.path.join(d, 'alice-mark'), 'w').write('alice-secret')
subprocess.Popen(['sleep', '300'], start_new_session=True)
os.environ['ALICE'] = 'alice-secret'
import json; json.alice = 'alice-secret'
print('left')`
	look := `import os, subprocess, json
found = [p for p in ('alice-mark', '/tmp/alice-mark', '/dev/shm/alice-mark') if os.path.exists(p)]
procs = subprocess.run(['ps', '-eo', 'args'], capture_output=True, text=True).stdout
print('FOUND', found, 'ALICE' in os.environ, hasattr(json, 'alice'), 'sleep 300' in procs)`
	for range 2 {
		var res struct {
			Stdout string `json:"stdout"`
		}
		tg.exec(t, aliceKey, map[string]any{"code": leave}).json(t, &res)
		if !strings.Contains(res.Stdout, "left") {
			t.Fatalf("alice's run: %+v", res)
		}
		id := tg.session(t, aliceKey, nil)
		tg.cell(t, aliceKey, id, leave)
		if c := mustJSON(t, tg.cell(t, aliceKey, id, look)); !strings.Contains(c, "True True True") {
			t.Fatalf("the probe does not see alice's marks in her own session: %s", c)
		}
		tg.exec(t, bobKey, map[string]any{"code": look}).json(t, &res)
		if !strings.Contains(res.Stdout, "FOUND [] False False False") {
			t.Errorf("bob's run after alice's: %q", res.Stdout)
		}
		bob := tg.session(t, bobKey, nil)
		if c := mustJSON(t, tg.cell(t, bobKey, bob, look)); !strings.Contains(c, "FOUND [] False False False") {
			t.Errorf("bob's session after alice's: %s", c)
		}
	}
}
