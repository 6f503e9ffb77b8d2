package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// coderunEnv runs the binary with exactly env (plus PATH).
func coderunEnv(t *testing.T, env []string, args ...string) cliResult {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	return runCLI(t, cmd)
}

func writeConfig(t *testing.T, dir, text string) string {
	t.Helper()
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// coderun config shows each value with where it came from, and the
// precedence is file < environment < flags.
func TestConfigShowsSources(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := writeConfig(t, dir, `limits:
  memory: 300MiB
store:
  data_dir: /from/file
  lease: 45s
runtime:
  linux:
    rootfs: /file/root
    pool: 2
model:
  spec: openai:from-file
`)
	env := []string{"HOME=" + dir, "CODERUN_CONFIG=" + path, "CODERUN_DATA_DIR=/from/env", "OPENAI_API_KEY=sk-very-secret"}
	r := coderunEnv(t, env, "config", "--rootfs", "/flag/root")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{
		"# configuration file: " + path,
		"memory: 300MiB  # " + path + ":2",
		"data_dir: /from/env  # env CODERUN_DATA_DIR",
		"lease: 45s  # " + path + ":5",
		"rootfs: /flag/root  # flag --rootfs",
		"pool: 2  # " + path + ":9",
		"spec: openai:from-file  # " + path + ":11",
		"cpu_time: 30s  # default",
		"OPENAI_API_KEY: set",
		"ANTHROPIC_API_KEY: unset",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "sk-very-secret") {
		t.Errorf("the API key is shown:\n%s", r.stdout)
	}

	// What it prints is a configuration file, read back to the same values.
	again := writeConfig(t, t.TempDir(), r.stdout)
	r2 := coderunEnv(t, []string{"HOME=" + dir}, "--config", again, "config", "--json")
	if r2.code != 0 {
		t.Fatalf("reading the printed configuration back: exit %d: %s\n%s", r2.code, r2.stderr, r.stdout)
	}
	var got struct {
		File     string `json:"file"`
		Settings map[string]struct {
			Value  any    `json:"value"`
			Source string `json:"source"`
		} `json:"settings"`
		Environment map[string]string `json:"environment"`
	}
	if err := json.Unmarshal([]byte(r2.stdout), &got); err != nil {
		t.Fatalf("%v\n%s", err, r2.stdout)
	}
	if got.File != again {
		t.Errorf("file %q, want %q", got.File, again)
	}
	for key, want := range map[string]any{"limits.memory": "300MiB", "store.data_dir": "/from/env",
		"runtime.linux.rootfs": "/flag/root", "runtime.linux.pool": float64(2), "model.spec": "openai:from-file"} {
		s := got.Settings[key]
		if s.Value != want || !strings.HasPrefix(s.Source, again+":") {
			t.Errorf("%s = %v from %s, want %v from %s", key, s.Value, s.Source, want, again)
		}
	}
	if got.Environment["OPENAI_API_KEY"] != "unset" {
		t.Errorf("environment: %v", got.Environment)
	}

	// Flags beat the environment, which beats the file.
	r3 := coderunEnv(t, env, "config", "--json", "--data-dir", "/from/flag", "--model", "ollama:from-flag")
	if err := json.Unmarshal([]byte(r3.stdout), &got); err != nil {
		t.Fatalf("%v\n%s", err, r3.stdout)
	}
	if s := got.Settings["store.data_dir"]; s.Value != "/from/flag" || s.Source != "flag --data-dir" {
		t.Errorf("store.data_dir = %v from %s", s.Value, s.Source)
	}
	if s := got.Settings["model.spec"]; s.Value != "ollama:from-flag" || s.Source != "flag --model" {
		t.Errorf("model.spec = %v from %s", s.Value, s.Source)
	}
	if got.Environment["OPENAI_API_KEY"] != "set" {
		t.Errorf("environment: %v", got.Environment)
	}
}

// A bad configuration is a usage error (exit 2) that names the key, and
// the line when it is in the file; nothing runs.
func TestConfigBadFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		text string
		env  []string
		args []string
		want string
	}{
		{"unknown key", "agent:\n  max_steps: 3\n  aprove: all\n", nil, []string{"config"}, `:3: unknown key "agent.aprove"`},
		{"bad value", "limits:\n  memory: lots\n", nil, []string{"exec", "-c", "print(1)"}, ":2: limits.memory: "},
		{"not yaml", "limits: [1,\n", nil, []string{"runs", "list"}, "config.yaml"},
		{"bad env", "", []string{"CODERUN_LEASE=soon"}, []string{"config"}, `$CODERUN_LEASE="soon": want a positive duration`},
		{"bad flag", "", nil, []string{"config", "--runtime", "firecracker"}, `--runtime: "firecracker": want docker, gvisor, linux`},
	} {
		t.Run(c.name, func(t *testing.T) {
			sub := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-"))
			os.MkdirAll(sub, 0o755)
			path := writeConfig(t, sub, c.text)
			r := coderunEnv(t, append([]string{"HOME=" + sub}, c.env...), append([]string{"--config", path}, c.args...)...)
			if r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 naming %q", r.code, r.stderr, c.want)
			}
			if r.stdout != "" {
				t.Errorf("stdout %q", r.stdout)
			}
		})
	}
	// A file that was named must exist; the default file need not.
	missing := filepath.Join(dir, "nope.yaml")
	for _, r := range []cliResult{
		coderunEnv(t, []string{"HOME=" + dir}, "--config", missing, "config"),
		coderunEnv(t, []string{"HOME=" + dir, "CODERUN_CONFIG=" + missing}, "config"),
	} {
		if r.code != exitUsage || !strings.Contains(r.stderr, "nope.yaml") {
			t.Errorf("missing named file: exit %d, %q", r.code, r.stderr)
		}
	}
	if r := coderunEnv(t, []string{"HOME=" + dir}, "config"); r.code != 0 || !strings.Contains(r.stdout, "configuration file: none") {
		t.Errorf("no default file: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
}

// The configuration reaches the commands: the file's memory limit stops an
// exec, and --memory overrides it.
func TestConfigLimitsReachExec(t *testing.T) {
	needSandbox(t)
	t.Parallel()
	dir := t.TempDir()
	path := writeConfig(t, dir, "limits:\n  memory: 100MiB\n")
	env := []string{"HOME=" + dir, "CODERUN_CONFIG=" + path}
	code := "x = bytearray(200 << 20); print(len(x) >> 20)"
	if r := coderunEnv(t, env, "exec", "-c", code); r.code != exitMemory {
		t.Errorf("with the file's 100MiB: exit %d, want %d\n%s", r.code, exitMemory, r.stderr)
	}
	if r := coderunEnv(t, env, "exec", "-c", code, "--memory", "400MiB"); r.code != 0 || r.stdout != "200\n" {
		t.Errorf("with --memory 400MiB: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
	}
}
