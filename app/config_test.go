package app

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox/linux"
	"go.yaml.in/yaml/v4"
)

// env is a getenv over a map.
func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func writeFile(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestPrecedenceFileEnvFlag(t *testing.T) {
	path := writeFile(t, `# coderun
store:
  data_dir: /from/file
  lease: 40s
limits:
  memory: 512MiB
  timeout: 12s
model:
  spec: openai:from-file
runtime:
  linux:
    pool: 3
    allow_weaker: [cgroup, seccomp]
agent:
  approve: all
`)
	c, err := Load(LoadOptions{File: path, Getenv: env(map[string]string{
		EnvDataDir: "/from/env", EnvModel: "ollama:from-env", "HOME": "/home/x"})})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Set("limits.memory", "1GiB", Flag("--memory")); err != nil {
		t.Fatal(err)
	}
	if err := c.Set("model.spec", "anthropic:from-flag", Flag("--model")); err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		key, source string
		got, want   any
	}{
		{"store.data_dir", "env " + EnvDataDir, c.Store.DataDir, "/from/env"},
		{"store.lease", path + ":4", c.Store.Lease, 40 * time.Second},
		{"limits.memory", "flag --memory", c.Limits.Memory, int64(1 << 30)},
		{"limits.timeout", path + ":7", c.Limits.WallTime, 12 * time.Second},
		{"model.spec", "flag --model", c.Model.Spec, "anthropic:from-flag"},
		{"runtime.linux.pool", path + ":12", c.RuntimeOptions().(*linux.Settings).Pool, 3},
		{"runtime.linux.allow_weaker", path + ":13", fmt.Sprint(c.RuntimeOptions().(*linux.Settings).AllowWeaker), "[cgroup seccomp]"},
		{"agent.approve", path + ":15", c.Agent.Approve, ApproveAll},
		{"agent.mode", "default", string(c.Agent.Mode), "single"},
		{"limits.cpu_time", "default", c.Limits.CPUTime, Defaults(env(nil)).Limits.CPUTime},
	} {
		if w.got != w.want {
			t.Errorf("%s = %v, want %v", w.key, w.got, w.want)
		}
		if got := c.Source(w.key).String(); got != w.source {
			t.Errorf("%s: source %q, want %q", w.key, got, w.source)
		}
	}
	if c.File() != path {
		t.Errorf("File() = %q, want %q", c.File(), path)
	}
}

func TestBadFilesNameKeyAndLine(t *testing.T) {
	for _, c := range []struct {
		name, text string
		want       []string
	}{
		{"unknown key", "runtime:\n  linux:\n    pools: 4\n", []string{":3: unknown key \"runtime.linux.pools\""}},
		{"unknown section", "limits:\n  memory: 1GiB\nsandbox:\n  x: 1\n", []string{":3: unknown key \"sandbox\""}},
		{"bad size", "limits:\n  memory: lots\n", []string{":2: limits.memory:", "use a number with a unit"}},
		{"bad duration", "session:\n  grace: soon\n", []string{":2: session.grace:", "want a duration"}},
		{"negative lease", "store:\n  lease: -5s\n", []string{":2: store.lease: want a positive duration"}},
		{"bad choice", "agent:\n  approve: maybe\n", []string{":2: agent.approve:", "want ask, all, none, defer"}},
		{"bad bool", "runtime:\n  linux:\n    zygote: sometimes\n", []string{":3: runtime.linux.zygote:", "want true or false"}},
		{"unknown runtime", "runtime:\n  name: firecracker\n", []string{":2: runtime.name:", `"firecracker": want docker, gvisor, linux`}},
		{"not yaml", "limits: [\n", []string{"config.yaml"}},
		{"twice", "limits:\n  memory: 1GiB\n  memory: 2GiB\n", []string{"config.yaml"}},
		{"mapping for a value", "model:\n  spec:\n    x: 1\n", []string{":3: model.spec: want a single value"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := writeFile(t, c.text)
			_, err := Load(LoadOptions{File: path, Getenv: env(nil)})
			if err == nil {
				t.Fatal("loaded")
			}
			if !errors.Is(err, ErrConfig) {
				t.Errorf("%v: not an ErrConfig", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestBadEnvAndFlagValuesNameThem(t *testing.T) {
	_, err := Load(LoadOptions{Getenv: env(map[string]string{EnvLease: "forever"})})
	if err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), `$CODERUN_LEASE="forever": want a positive duration such as 30s`) {
		t.Errorf("bad lease: %v", err)
	}
	c := Defaults(env(nil))
	err = c.Set("limits.memory", "lots", Flag("--memory"))
	if err == nil || !strings.HasPrefix(err.Error(), "--memory: ") {
		t.Errorf("bad flag: %v", err)
	}
	if c.Limits.Memory != Defaults(env(nil)).Limits.Memory || c.Source("limits.memory").Kind != FromDefault {
		t.Errorf("a bad value changed the setting: %d from %v", c.Limits.Memory, c.Source("limits.memory"))
	}
	if err := c.Set("limits.nonsense", "1", Flag("--x")); err == nil || !errors.Is(err, ErrConfig) {
		t.Errorf("unknown key: %v", err)
	}
}

func TestWhichFile(t *testing.T) {
	dir := t.TempDir()
	// A missing default file is fine.
	c, err := Load(LoadOptions{Getenv: env(map[string]string{"XDG_CONFIG_HOME": dir})})
	if err != nil || c.File() != "" {
		t.Fatalf("missing default file: %v, file %q", err, c.File())
	}
	// The default file is read when it exists.
	os.MkdirAll(filepath.Join(dir, "coderun"), 0o755)
	def := filepath.Join(dir, "coderun", "config.yaml")
	os.WriteFile(def, []byte("agent:\n  max_steps: 4\n"), 0o644)
	c, err = Load(LoadOptions{Getenv: env(map[string]string{"XDG_CONFIG_HOME": dir})})
	if err != nil || c.Agent.MaxSteps != 4 || c.File() != def {
		t.Fatalf("default file: %v, max_steps %d, file %q", err, c.Agent.MaxSteps, c.File())
	}
	// $CODERUN_CONFIG replaces it, and must exist.
	other := writeFile(t, "agent:\n  max_steps: 6\n")
	c, err = Load(LoadOptions{Getenv: env(map[string]string{"XDG_CONFIG_HOME": dir, EnvConfig: other})})
	if err != nil || c.Agent.MaxSteps != 6 {
		t.Fatalf("$CODERUN_CONFIG: %v, max_steps %d", err, c.Agent.MaxSteps)
	}
	_, err = Load(LoadOptions{Getenv: env(map[string]string{EnvConfig: filepath.Join(dir, "nope.yaml")})})
	if err == nil || !errors.Is(err, ErrConfig) {
		t.Errorf("missing $CODERUN_CONFIG file: %v", err)
	}
	// A file named by the caller wins over both, and must exist.
	c, err = Load(LoadOptions{File: def, Getenv: env(map[string]string{EnvConfig: other})})
	if err != nil || c.Agent.MaxSteps != 4 {
		t.Fatalf("named file: %v, max_steps %d", err, c.Agent.MaxSteps)
	}
	_, err = Load(LoadOptions{File: filepath.Join(dir, "nope.yaml"), Getenv: env(nil)})
	if err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "nope.yaml") {
		t.Errorf("missing named file: %v", err)
	}
	// An empty file is an empty configuration.
	if _, err := Load(LoadOptions{File: writeFile(t, "# nothing yet\n"), Getenv: env(nil)}); err != nil {
		t.Errorf("empty file: %v", err)
	}
}

func TestSetDefaultYieldsToFileAndFlags(t *testing.T) {
	c, err := Load(LoadOptions{File: writeFile(t, "runtime:\n  linux:\n    zygote: false\n"), Getenv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	c.SetDefault("runtime.linux.zygote", "true")
	c.SetDefault("runtime.linux.pool", "8")
	s := c.RuntimeOptions().(*linux.Settings)
	if s.Zygote || s.Pool != 8 {
		t.Errorf("zygote %v (file says false), pool %d (want the command's 8)", s.Zygote, s.Pool)
	}
	c.Set("runtime.linux.pool", "1", Flag("--pool"))
	c.SetDefault("runtime.linux.pool", "8")
	if s.Pool != 1 {
		t.Errorf("pool %d, want the flag's 1", s.Pool)
	}
}

// What Entries shows is a configuration file that loads to the same values.
func TestEntriesRoundTrip(t *testing.T) {
	c, err := Load(LoadOptions{File: writeFile(t, "session:\n  preload: [numpy, pandas]\n  memory: 1GiB\nlimits:\n  cpu_time: 1m30s\n"),
		Getenv: env(map[string]string{"HOME": "/home/x"})})
	if err != nil {
		t.Fatal(err)
	}
	tree := map[string]any{}
	for _, e := range c.Entries() {
		parts := strings.Split(e.Key, ".")
		m := tree
		for _, p := range parts[:len(parts)-1] {
			if m[p] == nil {
				m[p] = map[string]any{}
			}
			m = m[p].(map[string]any)
		}
		m[parts[len(parts)-1]] = e.Value
	}
	data, err := yaml.Marshal(tree)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Load(LoadOptions{File: writeFile(t, string(data)), Getenv: env(nil)})
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	a, b := c.Entries(), again.Entries()
	for i := range a {
		if fmt.Sprint(a[i].Value) != fmt.Sprint(b[i].Value) {
			t.Errorf("%s: %v, read back %v", a[i].Key, a[i].Value, b[i].Value)
		}
	}
	if got := fmt.Sprint(again.Session.Preload); got != "[numpy pandas]" {
		t.Errorf("preload %s", got)
	}
	if again.Limits.CPUTime != 90*time.Second || again.Session.Limits.Memory != 1<<30 {
		t.Errorf("cpu_time %s, session memory %d", again.Limits.CPUTime, again.Session.Limits.Memory)
	}
}

func TestModelEnvironmentHidesSecrets(t *testing.T) {
	got := ModelEnvironment(env(map[string]string{"OPENAI_API_KEY": "sk-secret", "OLLAMA_HOST": "localhost:11434"}))
	seen := map[string]string{}
	for _, e := range got {
		seen[e.Name] = e.Value
		if strings.Contains(e.Value, "sk-secret") {
			t.Errorf("%s shows the key", e.Name)
		}
	}
	if seen["OPENAI_API_KEY"] != "set" || seen["ANTHROPIC_API_KEY"] != "unset" || seen["OLLAMA_HOST"] != "localhost:11434" {
		t.Errorf("environment: %v", seen)
	}
}

func TestModelNeedsASpec(t *testing.T) {
	c := Defaults(env(nil))
	if _, _, err := c.OpenModel("", env(nil)); err == nil || !errors.Is(err, ErrConfig) {
		t.Errorf("no model: %v", err)
	}
	c.Set("model.spec", "ollama:qwen", Flag("--model"))
	_, spec, err := c.OpenModel("", env(nil))
	if err != nil || spec != "ollama:qwen" {
		t.Errorf("model: %q, %v", spec, err)
	}
}

// The example file in the README is a configuration that loads.
func TestREADMEExampleLoads(t *testing.T) {
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	i := strings.Index(s, "## Configuration")
	if i < 0 {
		t.Fatal("no ## Configuration section")
	}
	a := strings.Index(s[i:], "```yaml\n")
	if a < 0 {
		t.Fatal("no YAML example under ## Configuration")
	}
	text := s[i+a+len("```yaml\n"):]
	text = text[:strings.Index(text, "```")]
	c, err := Load(LoadOptions{File: writeFile(t, text), Getenv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if c.Source("agent.policy").Kind != FromFile || c.Session.Limits.WallTime != 2*time.Minute {
		t.Errorf("the example was not applied: agent.policy from %v, session.timeout %s", c.Source("agent.policy"), c.Session.Limits.WallTime)
	}
}
