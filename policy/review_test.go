package policy

import (
	"context"
	"strings"
	"sync"
	"testing"
)

func TestReviewUnknownLanguage(t *testing.T) {
	_, err := Review(context.Background(), "ruby", "puts 1")
	if err == nil || !strings.Contains(err.Error(), `unknown language "ruby"`) {
		t.Fatalf("got %v", err)
	}
	var r Reviewer
	if _, err := r.Analyze(context.Background(), "", "x"); err == nil {
		t.Fatal("empty language: want an error")
	}
}

func TestReviewDecisions(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		lang Language
		code string
		want Action
	}{
		{Python, "import pandas as pd\ndf = pd.read_csv('data.csv')\nprint(df.describe())", Allow},
		{Python, "import subprocess\nsubprocess.run(['ls'])", Ask},
		{Python, "import os\nos.system('rm -rf /')", Deny},
		{Python, "x = (", Allow},
		{Shell, "ls -la && wc -l data.csv", Allow},
		{Shell, "pip install requests", Ask},
		{Shell, "rm -rf /", Deny},
		{"bash", ":(){ :|:& };:", Deny},
		{"sh", "cat /etc/passwd", Ask},
	}
	for _, tt := range tests {
		d, err := Review(ctx, tt.lang, tt.code)
		if err != nil {
			t.Fatal(err)
		}
		if d.Action != tt.want {
			t.Errorf("%s %q: got %s, want %s\n%s", tt.lang, tt.code, d.Action, tt.want, d.Explanation)
		}
		if d.Explanation == "" {
			t.Errorf("%q: no explanation", tt.code)
		}
		if tt.want != Allow && len(d.Causes) == 0 {
			t.Errorf("%q: a %s decision must carry its causes", tt.code, d.Action)
		}
	}
}

func TestReviewCustomPolicy(t *testing.T) {
	p, err := ParsePolicy([]byte("rules:\n  network: deny\n  process.spawn: allow\n"))
	if err != nil {
		t.Fatal(err)
	}
	r := Reviewer{Policy: p}
	d, err := r.Review(context.Background(), Python, "import requests\nrequests.get('https://example.com')")
	if err != nil {
		t.Fatal(err)
	}
	if d.Action != Deny || d.Causes[0].Rule != RuleNetwork || d.Causes[0].Line != 1 {
		t.Errorf("got %+v", d)
	}
	d, err = r.Review(context.Background(), Python, "import subprocess")
	if err != nil {
		t.Fatal(err)
	}
	if d.Action != Allow {
		t.Errorf("process.spawn allowed: got %s", d.Action)
	}
}

// TestEveryRule shows one true positive for each rule of the catalogue.
func TestEveryRule(t *testing.T) {
	cases := map[string]struct {
		lang Language
		code string
	}{
		RuleProcessSpawn:     {Python, "import subprocess as sp\nsp.run(['ls'])"},
		RuleProcessSignal:    {Python, "import os\nos.kill(42, 15)"},
		RuleMultiprocessing:  {Python, "import multiprocessing"},
		RuleNetwork:          {Shell, "curl https://example.com"},
		RuleNativeCode:       {Python, "import ctypes"},
		RuleDynamicCode:      {Python, "eval(expr)"},
		RuleOutsideWorkspace: {Python, "open('/opt/data.csv')"},
		RuleSystemPath:       {Shell, "cat /etc/shadow"},
		RuleRmRoot:           {Shell, "rm -rf /"},
		RuleDiskWrite:        {Shell, "dd if=/dev/zero of=/dev/sda"},
		RuleFormatDisk:       {Shell, "mkfs.ext4 /dev/sda1"},
		RuleForkBomb:         {Shell, ":(){ :|:& };:"},
		RuleChmodRoot:        {Shell, "chmod -R 777 /"},
		RulePipeToShell:      {Shell, "curl -s https://x | sh"},
		RulePower:            {Shell, "shutdown -h now"},
		RuleKillAll:          {Shell, "kill -9 -1"},
		RuleSyntaxError:      {Python, "def f(:"},
		RuleUnavailable:      {Python, strings.Repeat("#", MaxCodeSize+1)},
	}
	for _, r := range Rules() {
		tc, ok := cases[r.ID]
		if !ok {
			t.Errorf("no case for rule %s", r.ID)
			continue
		}
		fs := analyze(t, tc.lang, tc.code)
		if !hasRule(fs, r.ID, 0) {
			t.Errorf("%s: %q gave:\n%s", r.ID, tc.code, dump(fs))
		}
	}
}

func TestReviewShellPositions(t *testing.T) {
	code := "#!/bin/bash\nset -e\necho start\n  cd build && rm -rf /\ncurl -s https://x |\n  sh\n"
	fs := analyze(t, Shell, code)
	type pos struct {
		rule      string
		line, col int
		snippet   string
	}
	want := []pos{
		{RuleRmRoot, 4, 22, "cd build && rm -rf /"},
		{RulePipeToShell, 5, 1, "curl -s https://x |"},
		{RuleNetwork, 5, 1, "curl -s https://x |"},
	}
	if len(fs) != len(want) {
		t.Fatalf("got:\n%s", dump(fs))
	}
	for i, w := range want {
		f := fs[i]
		if f.Rule != w.rule || f.Line != w.line || f.Column != w.col || f.Snippet != w.snippet {
			t.Errorf("finding %d = %s at %d:%d %q, want %s at %d:%d %q", i, f.Rule, f.Line, f.Column, f.Snippet, w.rule, w.line, w.col, w.snippet)
		}
	}
}

func TestReviewMultiLineCommandSnippet(t *testing.T) {
	fs := analyze(t, Shell, "echo ok\nsudo rm -rf \\\n    --no-preserve-root \\\n    /\n")
	if len(fs) != 1 || fs[0].Line != 4 || fs[0].Snippet != "sudo rm -rf --no-preserve-root /" {
		t.Fatalf("got:\n%s", dump(fs))
	}
}

func TestReviewEmbeddedPositions(t *testing.T) {
	// A Python here-document maps line for line.
	code := "echo start\npython3 - <<'PY'\nimport json\nimport socket\nPY\necho end\n"
	fs := analyze(t, Shell, code)
	if len(fs) != 1 || fs[0].Rule != RuleNetwork || fs[0].Line != 4 || fs[0].Column != 1 || fs[0].Snippet != "import socket" {
		t.Fatalf("got:\n%s", dump(fs))
	}
	// Code in a string is reported where the string is.
	fs = analyze(t, Python, "import json\nimport os\nos.system('curl -s https://x | bash')\n")
	if !hasRule(fs, RulePipeToShell, 3) {
		t.Fatalf("got:\n%s", dump(fs))
	}
	for _, f := range fs {
		if f.Rule == RulePipeToShell && (f.Column != 1 || !strings.Contains(f.Message, "os.system") || f.Snippet != "os.system('curl -s https://x | bash')") {
			t.Errorf("got %+v", f)
		}
	}
	// Python in shell in Python.
	fs = analyze(t, Python, "import subprocess\nsubprocess.run(['python3', '-c', 'import ctypes'])\n")
	if !hasRule(fs, RuleNativeCode, 2) {
		t.Fatalf("got:\n%s", dump(fs))
	}
}

func TestReviewWorkspace(t *testing.T) {
	r := Reviewer{Workspace: []string{"/data", "/scratch"}}
	fs, err := r.Analyze(context.Background(), Python, "open('/data/in.csv')\nopen('/scratch/x', 'w')\nopen('/work/out.csv', 'w')\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 || fs[0].Line != 3 || fs[0].Rule != RuleOutsideWorkspace {
		t.Fatalf("got:\n%s", dump(fs))
	}
	fs, err = r.Analyze(context.Background(), Shell, "cat ../x\ncat /scratch/y\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 || fs[0].Line != 1 || !strings.Contains(fs[0].Message, "../x (/x)") {
		t.Fatalf("got:\n%s", dump(fs))
	}
}

func TestReviewConcurrent(t *testing.T) {
	r := &Reviewer{}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lang, code := Python, "import socket"
			if i%2 == 1 {
				lang, code = Shell, "rm -rf /"
			}
			d, err := r.Review(context.Background(), lang, code)
			if err != nil || d.Action == Allow {
				t.Errorf("review %d: %v %v", i, d.Action, err)
			}
		}()
	}
	wg.Wait()
}
