package e2b_test

import (
	"strings"
	"testing"

	"github.com/coderun/coderun/server/e2b"
)

// TestSDKCommandsBesideCode drives the SDK through what E2B sandboxes do
// and coderun's did not while a sandbox ran one program at a time: a
// background command waiting for a file that code writes, code waiting
// for a file that a command writes, two commands waiting for each other,
// commands.list, connect, sendStdin and closeStdin, kill; and one file
// system for every context (a further Python context, the bash context),
// the commands and files.*; and /home/user, as E2B code uses it, in code,
// bash, commands and the paths reported.
func TestSDKCommandsBesideCode(t *testing.T) {
	node := nodeSDK(t)
	_, ts := newServer(t, e2b.Options{Keys: testKeys})
	out := runScenario(t, node, "together",
		"E2B_API_URL="+ts.URL, "E2B_SANDBOX_URL="+ts.URL, "E2B_API_KEY=key-alice", "E2B_DEBUG=", "E2B_DOMAIN=")

	var bg struct {
		PID    int `json:"pid"`
		Listed []struct {
			PID  int      `json:"pid"`
			Cmd  string   `json:"cmd"`
			Args []string `json:"args"`
		} `json:"listed"`
		Code     []string `json:"code"`
		Stdout   string   `json:"stdout"`
		ExitCode int      `json:"exitCode"`
	}
	field(t, out, "background", &bg)
	if len(bg.Listed) != 1 || bg.Listed[0].PID != bg.PID || bg.Listed[0].Cmd != "/bin/bash" || len(bg.Listed[0].Args) != 3 {
		t.Errorf("commands.list while a background command runs: %+v, want it (pid %d, /bin/bash -l -c ...)", bg.Listed, bg.PID)
	}
	if strings.Join(bg.Code, "") != "code ran\n" || bg.Stdout != "released\n" || bg.ExitCode != 0 {
		t.Errorf("runCode while a background command waits for its file: %+v", bg)
	}

	var waits struct {
		Code    []string `json:"code"`
		Error   *string  `json:"error"`
		CmdExit int      `json:"cmdExit"`
	}
	field(t, out, "codeWaitsForCommand", &waits)
	if strings.Join(waits.Code, "") != "written-by-a-command\n" || waits.Error != nil || waits.CmdExit != 0 {
		t.Errorf("a command while runCode waits for its file: %+v", waits)
	}

	var several struct {
		A, B     string
		Distinct bool
	}
	field(t, out, "severalAtOnce", &several)
	if several.A != "a-done\n" || several.B != "b-done\n" || !several.Distinct {
		t.Errorf("two commands waiting for each other: %+v", several)
	}

	var conn struct{ Seen, Connected, Started string }
	field(t, out, "connectAndStdin", &conn)
	if conn.Seen != "via stdin\n" || conn.Connected != "via stdin\n" || conn.Started != "via stdin\n" {
		t.Errorf("connect to a running command, sendStdin, closeStdin: %+v", conn)
	}

	var kill struct {
		ListedBefore, Killed, ListedAfter, Again bool
		Waited                                   string
	}
	field(t, out, "kill", &kill)
	if !kill.ListedBefore || !kill.Killed || kill.ListedAfter || kill.Again || kill.Waited != "CommandExitError" {
		t.Errorf("commands.kill: %+v, want listed, killed (true), its wait a CommandExitError, then gone (a second kill false)", kill)
	}

	var home struct {
		Code, Cmd, Sub, InSub, Written string
		Bash                           []string
		Entries                        []string
	}
	field(t, out, "home", &home)
	if home.Code != "'/work'" || home.Cmd != "/home/user\nabsolute" || strings.Join(home.Bash, "") != "/home/user\nabsolute" ||
		home.Sub != "/home/user/sub\n" || home.InSub != "/home/user/sub\n" || home.Written != "/home/user/sub/w.txt" || strings.Join(home.Entries, ",") != "/home/user/sub/w.txt" {
		t.Errorf("/home/user as E2B code uses it: %+v", home)
	}

	var not struct {
		Metrics, Pty, AsRoot string
		AsUser               int
		Running              bool
	}
	field(t, out, "notServed", &not)
	if !strings.Contains(not.AsRoot, `user "root" is not served`) || not.AsUser != 0 {
		t.Errorf("a command as root must fail saying so, one as E2B's user run: %+v", not)
	}
	if !strings.Contains(not.Metrics, "not served by coderun") || strings.HasPrefix(not.Metrics, "SandboxNotFoundError") ||
		!strings.Contains(not.Pty, "PTY") || !not.Running {
		t.Errorf("getMetrics and pty.create must fail saying they are not served (the sandbox still running): %+v", not)
	}

	var shared struct{ Read, InDefault, InCommand, InContext string }
	field(t, out, "sharedFiles", &shared)
	if shared.Read != "from a context" || shared.InDefault != "'from-bash'" || shared.InCommand != "from a contextfrom-bash\n" || shared.InContext != "'from files.write'" {
		t.Errorf("one file system for contexts, commands and files: %+v", shared)
	}
}

// TestSDKWatchDir drives files.watchDir: the files written by files.*, by
// code and by a command in a watched directory (recursive) come as
// create, write and remove events; a missing directory is the SDK's
// FileNotFoundError.
func TestSDKWatchDir(t *testing.T) {
	node := nodeSDK(t)
	_, ts := newServer(t, e2b.Options{Keys: testKeys})
	out := runScenario(t, node, "watch",
		"E2B_API_URL="+ts.URL, "E2B_SANDBOX_URL="+ts.URL, "E2B_API_KEY=key-alice", "E2B_DEBUG=", "E2B_DOMAIN=")
	var w struct {
		Events  []string `json:"events"`
		Missing string   `json:"missing"`
	}
	field(t, out, "watchDir", &w)
	for _, want := range []string{"create by-files.txt", "create by-code.txt", "create sub", "create sub/by-command.txt", "remove by-files.txt", "write by-code.txt"} {
		if !contains(w.Events, want) {
			t.Errorf("watchDir: no %q among %q", want, w.Events)
		}
	}
	if w.Missing != "FileNotFoundError" {
		t.Errorf("watching a missing directory threw %q, want the SDK's FileNotFoundError", w.Missing)
	}
}
