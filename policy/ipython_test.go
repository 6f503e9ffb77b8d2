package policy

import "testing"

// Session cells run under IPython, which also accepts shell escapes and
// magics. Every snippet here is only parsed, never run.

func TestIPython(t *testing.T) {
	runRuleCases(t, Python, []ruleCase{
		{"! escape", "import pandas as pd\n!rm -rf /\nprint(1)", RuleRmRoot, 2},
		{"! escape spawns", "!ls -la", RuleProcessSpawn, 1},
		{"!! escape", "!!curl -s https://x | sh", RulePipeToShell, 1},
		{"indented escape", "for i in range(3):\n    !kill -9 -1", RuleKillAll, 2},
		{"assignment escape", "files = !ls /etc\nprint(files)", RuleSystemPath, 1},
		{"%sx", "out = %sx cat /etc/shadow", RuleSystemPath, 1},
		{"%system", "%system shutdown now", RulePower, 1},
		{"%pip", "%pip install requests", RuleNetwork, 1},
		{"%cd", "%cd /etc", RuleSystemPath, 1},
		{"%load url", "%load https://example.com/x.py", RuleNetwork, 1},
		{"%time statement", "import os\n%time os.system('ls')", RuleProcessSpawn, 2},
		{"%%bash", "%%bash\necho start\nrm -rf /", RuleRmRoot, 3},
		{"%%sh spawns", "%%sh\nls", RuleProcessSpawn, 1},
		{"%%script bash", "%%script bash\ncurl -s https://x | bash", RulePipeToShell, 2},
		{"%%time python", "%%time\nimport subprocess\nsubprocess.run(['ls'])", RuleProcessSpawn, 3},
		{"%%writefile outside", "%%writefile /etc/cron.d/job\n* * * * * root rm -rf /", RuleSystemPath, 1},
		{"%%perl", "%%perl\nsystem('ls')", RuleDynamicCode, 1},
		{"python around escape", "import socket\n!echo hi", RuleNetwork, 1},
		{"get_ipython().system", "get_ipython().system('rm -rf /')", RuleRmRoot, 1},
		{"get_ipython().run_cell", "get_ipython().run_cell(code)", RuleDynamicCode, 1},
	})
	runCleanCases(t, Python, map[string]string{
		"string with bang line":      "s = '''\n!not a command\n%d items\n'''\nprint(s)",
		"modulo continuation":        "x = (10\n% 3)",
		"%%writefile inside":         "%%writefile script.py\nimport os\nos.system('rm -rf /')",
		"%%html":                     "%%html\n<b>rm -rf /</b>",
		"%matplotlib":                "%matplotlib inline\nimport matplotlib.pyplot as plt",
		"%%time clean":               "%%time\nsum(range(10))",
		"magic-looking string":       `print("!rm -rf /")`,
		"%%writefile workspace path": "%%writefile /work/notes.txt\nhello",
	})
}

func TestIPythonPositions(t *testing.T) {
	fs := analyze(t, Python, "\n  \n%%bash\nls")
	if len(fs) != 1 || fs[0].Rule != RuleProcessSpawn || fs[0].Line != 3 {
		t.Fatalf("got:\n%s", dump(fs))
	}
	fs = analyze(t, Python, "%%bash\necho ok\ncat /etc/shadow\n")
	if len(fs) != 2 || fs[1].Rule != RuleSystemPath || fs[1].Line != 3 || fs[1].Column != 5 || fs[1].Snippet != "cat /etc/shadow" {
		t.Fatalf("got:\n%s", dump(fs))
	}
	fs = analyze(t, Python, "if True:\n    !rm -rf /\n")
	for _, f := range fs {
		if f.Line != 2 || f.Column != 5 || f.Snippet != "!rm -rf /" {
			t.Errorf("got %+v", f)
		}
	}
}
