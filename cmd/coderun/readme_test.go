package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/coderun/coderun/llm/llmtest"
)

// readmeExample is what a README example must do: its exit status, and a
// line of its output (stdout and stderr together).
type readmeExample struct {
	match string // a part of the command that identifies it
	code  int
	want  string
	skip  string         // why the test does not run it
	model []llmtest.Turn // the model's replies, for ask
	file  string         // a file the command must leave behind
}

// readmeExamples covers every command in the README's sh blocks, in
// README order for the ones that depend on earlier ones (runs, review).
var readmeExamples = []readmeExample{
	{match: "scripts/run.sh", skip: "the quick start itself: it builds bin/coderun in the source tree"},
	{match: "scripts/test.sh", skip: "the quick start itself: CI runs it"},
	{match: "export OPENAI_API_KEY", skip: "the test sets the environment itself (a scripted model server's keys and URLs)"},
	{match: "export CODERUN_MODEL", skip: "the test sets the environment itself"},
	{match: "export E2B_API_URL", skip: "the E2B SDK's settings: server/e2b's TestSDKControlPlane runs the SDK from npm with them"},
	{match: `require("@e2b/code-interpreter")`, skip: "the E2B SDK from npm against a running server: server/e2b's TestSDKControlPlane"},
	{match: "Sandbox.create().then", skip: "the second line of the E2B SDK example above"},
	{match: "coderun serve --insecure-local &", skip: "a server left running: app's and server/e2b's tests start coderun serve themselves"},
	{match: "E2B_DEBUG=true node", skip: "the E2B SDK in debug mode: server/e2b's TestSDKDebugMode"},
	{match: "bin/coderun bench", skip: "a benchmark: minutes of measurements"},
	{match: "go test ./eval", skip: "a benchmark"},
	{match: "coderun image build", skip: "a Docker Engine and minutes of debootstrap: sandbox/docker's tests run in the image it builds"},
	{match: "go test ./sandbox/docker", skip: "the docker runtime's own tests, against a Docker Engine"},
	{match: "exec -c 'print(sum([120, 80, 200, 150]) / 4)'", want: "137.5"},
	{match: "exec --lang bash -c 'ls -la /work; df -h /work'", want: "/work"},
	{match: "exec examples/analysis.py", want: "conversion: 7.61%", file: "results/signups.png"},
	{match: "console.log(6*7)", want: `"stdout": "42\n"`},
	{match: "-o verdicts.jsonl", want: "passed    164 (100.00%)", file: "verdicts.jsonl"},
	{match: "--samples examples/samples.jsonl", want: "pass@1 0.5000", file: "results.jsonl"},
	{match: "bin/coderun repl --lang bash", want: ""},
	{match: "printf 'import pandas", want: "count"},
	{match: "bin/coderun repl", want: ""}, // at a terminal it reads cells; here its input is empty
	{match: "notebook run examples/analysis.ipynb", want: "3 cells executed, 0 not ok", file: "analysis.out.ipynb"},
	{match: `ask "What is the mean`, want: "The mean is 137.5.", model: []llmtest.Turn{
		llmtest.RunCode("c1", "python", "values = [120, 80, 200, 150]\nprint('mean:', sum(values) / len(values))\n"),
		llmtest.Reply("The mean is 137.5."),
	}},
	{match: `ask "Total sales by month`, want: "North and south together sold 200 in January", file: "results/by_month.png", model: []llmtest.Turn{
		llmtest.RunCode("c1", "python", "import pandas as pd\nimport matplotlib\nmatplotlib.use('Agg')\n"+
			"df = pd.read_csv('sales.csv')\nby_month = df.groupby('month').sales.sum()\nprint(by_month)\n"+
			"by_month.plot(kind='bar').figure.savefig('by_month.png')\n"),
		llmtest.Reply("North and south together sold 200 in January, 230 in February, 280 in March and 330 in April; the chart is by_month.png."),
	}},
	{match: `ask "Which region grew fastest`, want: "South grew fastest", model: []llmtest.Turn{
		llmtest.RunCode("c1", "python", "import pandas as pd\ndf = pd.read_csv('sales.csv')\n"+
			"g = df.pivot(index='month', columns='region', values='sales')\nprint((g.iloc[-1] / g.iloc[0]).round(3))\n"),
		llmtest.Reply("South grew fastest: its sales rose by a factor of 2.125, against 1.333 for north."),
		llmtest.Reply("South grew fastest: its sales rose by a factor of 2.125, against 1.333 for north."),
	}},
	{match: "runs list", want: "succeeded"},
	{match: "runs show 3f9a2c", want: "What is the mean"},
	{match: "runs export 3f9a2c > run.json", file: "run.json"},
	{match: "runs export 3f9a2c --format ipynb", file: "run.ipynb"},
	{match: "runs stats --since 24h", want: "runs:"},
	{match: "runs resume 3f9a2c", code: exitFailure, want: "has already ended (succeeded)"},
	{match: "review list", want: "ITEM"},
	{match: "review show 3f9a2c", want: "The mean is 137.5."},
	{match: "review approve 3f9a2c", code: exitFailure, want: "not awaiting approval"},
	{match: `review close 7`, code: exitUsage, want: "review 7: not found"},
}

// Every command of the README's examples runs as written, from a copy of
// the repository's layout (bin/coderun, examples/, eval/testdata/), against
// a scripted model server for ask. The one substitution: the example run id
// 3f9a2c becomes the id of the first run the examples made.
func TestReadmeExamples(t *testing.T) {
	needSandbox(t)
	srv := llmtest.NewServer()
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, link := range [][2]string{{binary, "bin/coderun"}, {filepath.Join(root, "examples"), "examples"}, {filepath.Join(root, "eval"), "eval"}} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(link[1])), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(link[0], filepath.Join(dir, link[1])); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "CODERUN_DATA_DIR="+filepath.Join(dir, "data"),
		"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL="+srv.BaseURL(llmtest.OpenAI),
		"ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL="+srv.BaseURL(llmtest.Anthropic),
		"CODERUN_MODEL=openai:gpt-4.1-mini")
	firstRun := ""
	for _, line := range readmeCommands(t, filepath.Join(root, "README.md")) {
		ex := findExample(line)
		if ex == nil {
			t.Errorf("README example with no expectation in readmeExamples (add one): %s", line)
			continue
		}
		if ex.skip != "" {
			t.Logf("not run: %s (%s)", line, ex.skip)
			continue
		}
		cmdline := line
		if strings.Contains(cmdline, "3f9a2c") {
			if firstRun == "" {
				t.Fatalf("%s: no run made before it", line)
			}
			cmdline = strings.ReplaceAll(cmdline, "3f9a2c", firstRun)
		}
		srv.Push(ex.model...)
		cmd := exec.Command("bash", "-c", cmdline)
		cmd.Dir, cmd.Env = dir, env
		cmd.Stdin = strings.NewReader("")
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != ex.code || !strings.Contains(string(out), ex.want) {
			t.Errorf("%s\nexit %d, want %d and %q in:\n%s", line, code, ex.code, ex.want, out)
		}
		if ex.file != "" {
			if _, err := os.Stat(filepath.Join(dir, ex.file)); err != nil {
				t.Errorf("%s: left no %s: %v", line, ex.file, err)
			}
		}
		if firstRun == "" && strings.Contains(line, "coderun ask") {
			firstRun = firstRunID(t, dir, env)
		}
	}
}

// readmeCommands are the command lines of the README's sh blocks (comments
// and comment-only lines dropped).
func readmeCommands(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cmds []string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "```sh"):
			in = true
		case strings.HasPrefix(line, "```"):
			in = false
		case in:
			line = strings.TrimSpace(trailingComment.ReplaceAllString(line, ""))
			if line != "" && !strings.HasPrefix(line, "#") {
				cmds = append(cmds, line)
			}
		}
	}
	return cmds
}

// trailingComment is a "  # ..." after a command (not inside quotes: the
// README's examples put no " #" in their arguments).
var trailingComment = regexp.MustCompile(`\s+#\s.*$`)

func findExample(line string) *readmeExample {
	for i := range readmeExamples {
		if strings.Contains(line, readmeExamples[i].match) {
			return &readmeExamples[i]
		}
	}
	return nil
}

// firstRunID is the id prefix of the run the first ask example made.
func firstRunID(t *testing.T, dir string, env []string) string {
	t.Helper()
	cmd := exec.Command("bin/coderun", "runs", "list")
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("runs list: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 2 {
		t.Fatalf("runs list shows no run:\n%s", out)
	}
	return strings.Fields(lines[len(lines)-1])[0]
}
