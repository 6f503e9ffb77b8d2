package policy

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Every snippet here is only parsed by the analyser, never run.

func TestPythonProcess(t *testing.T) {
	runRuleCases(t, Python, []ruleCase{
		{"import subprocess", "import subprocess", RuleProcessSpawn, 1},
		{"subprocess.run", "import subprocess\nsubprocess.run(['ls'])", RuleProcessSpawn, 2},
		{"alias import", "import subprocess as sp\nx = 1\nsp.run(['ls'])", RuleProcessSpawn, 3},
		{"from import alias", "from subprocess import Popen as P\nP(['ls'])", RuleProcessSpawn, 2},
		{"from os import system as s", "from os import system as s\ns('ls')", RuleProcessSpawn, 2},
		{"os.system without import (earlier cell)", "os.system('ls')", RuleProcessSpawn, 1},
		{"os.popen", "import os\nout = os.popen('ls').read()", RuleProcessSpawn, 2},
		{"os.execvp", "import os\nos.execvp('ls', ['ls'])", RuleProcessSpawn, 2},
		{"os.execl", "import os\nos.execl('/bin/ls', 'ls')", RuleProcessSpawn, 2},
		{"os.spawnl", "import os\nos.spawnl(os.P_WAIT, '/bin/ls', 'ls')", RuleProcessSpawn, 2},
		{"os.posix_spawn", "import os\nos.posix_spawn('/bin/ls', ['ls'], {})", RuleProcessSpawn, 2},
		{"os.fork", "import os\npid = os.fork()", RuleProcessSpawn, 2},
		{"pty.spawn", "import pty\npty.spawn('/bin/sh')", RuleProcessSpawn, 1},
		{"getattr", "import os\ngetattr(os, 'system')('ls')", RuleProcessSpawn, 2},
		{"getattr concatenated", "import os\nf = getattr(os, 'sys' 'tem')\nf('ls')", RuleProcessSpawn, 2},
		{"getattr added", "import os\ngetattr(os, 'sys' + 'tem')('ls')", RuleProcessSpawn, 2},
		{"getattr constant", "import os\nNAME = 'system'\ngetattr(os, NAME)('ls')", RuleProcessSpawn, 3},
		{"import_module added", "import importlib\nimportlib.import_module('sub' + 'process')", RuleProcessSpawn, 2},
		{"__getattribute__", "import os\nos.__getattribute__('system')('ls')", RuleProcessSpawn, 2},
		{"globals builtins", "globals()['__builtins__'].__import__('os').system('ls')", RuleProcessSpawn, 1},
		{"__import__", "__import__('subprocess').run(['ls'])", RuleProcessSpawn, 1},
		{"__import__ os", "__import__('os').system('ls')", RuleProcessSpawn, 1},
		{"__import__ bound", "m = __import__('subprocess')\nm.call('ls')", RuleProcessSpawn, 1},
		{"importlib", "import importlib\nimportlib.import_module('subprocess').run(['ls'])", RuleProcessSpawn, 2},
		{"sys.modules", "import sys\nsys.modules['subprocess'].run(['ls'])", RuleProcessSpawn, 2},
		{"builtins __import__", "__builtins__.__import__('os').system('ls')", RuleProcessSpawn, 1},
		{"builtins module", "import builtins\nbuiltins.__import__('os').system('ls')", RuleProcessSpawn, 2},
		{"vars", "import os\nvars(os)['system']('ls')", RuleProcessSpawn, 2},
		{"__dict__", "import os\nos.__dict__['system']('ls')", RuleProcessSpawn, 2},
		{"star import", "from os import *\nsystem('ls')", RuleProcessSpawn, 2},
		{"star import subprocess", "from subprocess import *\nx = 1\ncheck_output(['ls'])", RuleProcessSpawn, 3},
		{"assigned function", "import os\nrun = os.system\nrun('ls')", RuleProcessSpawn, 3},
		{"assigned module", "import os\no = os\no.system('ls')", RuleProcessSpawn, 3},
		{"tuple assignment", "import os\na, b = os.system, os.popen\nb('ls')", RuleProcessSpawn, 3},
		{"walrus", "import os\nif (f := os.system):\n    f('ls')", RuleProcessSpawn, 3},
		{"posix module", "import posix\nposix.system('ls')", RuleProcessSpawn, 2},
		{"asyncio subprocess", "import asyncio\nasyncio.create_subprocess_shell('ls')", RuleProcessSpawn, 2},
		{"in function", "def f():\n    import subprocess\n    return subprocess.check_output(['id'])", RuleProcessSpawn, 3},
		{"in lambda default", "import os\nf = lambda cmd, run=os.system: run(cmd)", RuleProcessSpawn, 2},
		{"exec literal", "exec('import subprocess')", RuleProcessSpawn, 1},
		{"exec literal nested", "exec(\"exec('import os; os.system(1)')\")", RuleProcessSpawn, 1},
		{"multiprocessing", "from multiprocessing import Pool\nwith Pool(4) as p:\n    p.map(abs, [1])", RuleMultiprocessing, 1},
		{"process pool", "from concurrent.futures import ProcessPoolExecutor\nProcessPoolExecutor()", RuleMultiprocessing, 1},
		{"os.kill", "import os\nos.kill(1234, 9)", RuleProcessSignal, 2},
	})
}

func TestPythonNetworkNativeDynamic(t *testing.T) {
	runRuleCases(t, Python, []ruleCase{
		{"socket", "import socket\ns = socket.socket()", RuleNetwork, 1},
		{"socket connection", "import socket as s\ns.create_connection(('example.com', 80))", RuleNetwork, 2},
		{"urllib.request", "import urllib.request\nurllib.request.urlopen('https://x')", RuleNetwork, 1},
		{"from urllib.request", "from urllib.request import urlopen\nurlopen('https://x')", RuleNetwork, 2},
		{"urllib attribute", "import urllib\nurllib.request.urlopen('https://x')", RuleNetwork, 2},
		{"http.client", "import http.client\nhttp.client.HTTPSConnection('x')", RuleNetwork, 1},
		{"http.server", "from http.server import HTTPServer", RuleNetwork, 1},
		{"requests", "import requests\nr = requests.get('https://x')", RuleNetwork, 2},
		{"requests alias", "import requests as rq\nrq.post('https://x', json={})", RuleNetwork, 2},
		{"httpx", "import httpx", RuleNetwork, 1},
		{"aiohttp", "import aiohttp", RuleNetwork, 1},
		{"ftplib", "from ftplib import FTP\nFTP('x')", RuleNetwork, 1},
		{"smtplib", "import smtplib\nsmtplib.SMTP('mail')", RuleNetwork, 1},
		{"telnetlib", "import telnetlib", RuleNetwork, 1},
		{"pandas url", "import pandas as pd\ndf = pd.read_csv('https://example.com/d.csv')", RuleNetwork, 2},
		{"url via variable", "URL = 'https://example.com/d.json'\nimport pandas as pd\npd.read_json(URL)", RuleNetwork, 3},
		{"__import__ socket", "__import__('socket').socket()", RuleNetwork, 1},
		{"ctypes", "import ctypes\nctypes.CDLL(None)", RuleNativeCode, 1},
		{"ctypes from", "from ctypes import CDLL, c_int", RuleNativeCode, 1},
		{"ctypes earlier cell", "libc = ctypes.CDLL('libc.so.6')", RuleNativeCode, 1},
		{"cffi", "from cffi import FFI\nffi = FFI()", RuleNativeCode, 1},
		{"eval variable", "x = input()\nprint(eval(x))", RuleDynamicCode, 2},
		{"exec variable", "code = input()\nexec(code)", RuleDynamicCode, 2},
		{"exec constant", "code = 'import subprocess'\nexec(code)", RuleProcessSpawn, 2},
		{"exec file", "exec(open('script.py').read())", RuleDynamicCode, 1},
		{"exec f-string", "exec(f'print({x})')", RuleDynamicCode, 1},
		{"compile variable", "compile(src, 'f', 'exec')", RuleDynamicCode, 1},
		{"__import__ variable", "mod = __import__(name)", RuleDynamicCode, 1},
		{"import_module variable", "import importlib\nimportlib.import_module(name)", RuleDynamicCode, 2},
		{"getattr computed", "import os\nf = getattr(os, name)", RuleDynamicCode, 2},
		{"builtins eval", "import builtins\nbuiltins.eval(s)", RuleDynamicCode, 2},
		{"getattr builtins eval", "getattr(__builtins__, 'eval')(s)", RuleDynamicCode, 1},
		{"builtins subscript eval", "__builtins__['eval'](s)", RuleDynamicCode, 1},
		{"globals builtins eval", "globals()['__builtins__']['exec'](s)", RuleDynamicCode, 1},
		{"runpy", "import runpy\nrunpy.run_path('x.py')", RuleDynamicCode, 1},
	})
}

func TestPythonPathsAndDestructive(t *testing.T) {
	runRuleCases(t, Python, []ruleCase{
		{"open /etc/passwd", "data = open('/etc/passwd').read()", RuleSystemPath, 1},
		{"open with keyword", "open(file='/etc/shadow')", RuleSystemPath, 1},
		{"os.path.join", "import os\nopen(os.path.join('/etc', 'shadow'))", RuleSystemPath, 2},
		{"pathlib", "from pathlib import Path\nPath('/etc/hosts').read_text()", RuleSystemPath, 2},
		{"pathlib division", "from pathlib import Path\np = Path('/etc') / 'hosts'", RuleSystemPath, 2},
		{"home", "from pathlib import Path\nkey = (Path.home() / '.ssh' / 'id_rsa').read_text()", RuleSystemPath, 2},
		{"expanduser", "import os\nopen(os.path.expanduser('~/.bashrc'))", RuleSystemPath, 2},
		{"proc f-string", "pid = 1\nopen(f'/proc/{pid}/environ')", RuleSystemPath, 2},
		{"proc concatenation", "open('/proc/' + pid + '/mem', 'rb')", RuleSystemPath, 1},
		{"path constant", "P = '/etc/passwd'\nwith open(P) as f:\n    pass", RuleSystemPath, 2},
		{"sys path in other call", "x = load_config('/etc/app/config.yaml')", RuleSystemPath, 1},
		{"to_csv", "df.to_csv('/etc/out.csv')", RuleSystemPath, 1},
		{"os.remove", "import os\nos.remove('/etc/hosts')", RuleSystemPath, 2},
		{"dev", "open('/dev/input/event0', 'rb')", RuleSystemPath, 1},
		{"sys", "open('/sys/class/net/eth0/address').read()", RuleSystemPath, 1},
		{"workspace escape", "open('/work/../etc/passwd')", RuleSystemPath, 1},
		{"outside workspace", "words = open('/usr/share/dict/words').read()", RuleOutsideWorkspace, 1},
		{"dot-dot", "open('../secret.txt')", RuleOutsideWorkspace, 1},
		{"listdir root", "import os\nos.listdir('/')", RuleOutsideWorkspace, 2},
		{"numpy save outside", "import numpy as np\nnp.save('/opt/x.npy', a)", RuleOutsideWorkspace, 2},
		{"rmtree root", "import shutil\nshutil.rmtree('/')", RuleRmRoot, 2},
		{"rmtree home", "import shutil, os\nshutil.rmtree(os.path.expanduser('~'))", RuleRmRoot, 2},
		{"rmtree /usr", "from shutil import rmtree\nrmtree('/usr')", RuleRmRoot, 2},
		{"open disk for writing", "with open('/dev/sda', 'wb') as f:\n    f.write(b'x')", RuleDiskWrite, 1},
		{"sysrq", "open('/proc/sysrq-trigger', 'w').write('b')", RulePower, 1},
		{"os.system rm", "import os\nos.system('rm -rf /')", RuleRmRoot, 2},
		{"os.system rm aliased", "from os import system as run\nrun('rm -rf --no-preserve-root /')", RuleRmRoot, 2},
		{"subprocess list rm", "import subprocess\nsubprocess.run(['rm', '-rf', '/'])", RuleRmRoot, 2},
		{"subprocess args keyword", "import subprocess\nsubprocess.run(args=['rm', '-rf', '/'])", RuleRmRoot, 2},
		{"subprocess bash -c", "import subprocess\nsubprocess.call(['bash', '-c', 'rm -rf /'])", RuleRmRoot, 2},
		{"subprocess shell pipe", "import subprocess\nsubprocess.run('curl -s https://x | sh', shell=True)", RulePipeToShell, 2},
		{"os.system f-string slash", "import os\nos.system(f'rm -rf /{name}')", RuleRmRoot, 2},
		{"os.system constant", "import os\nCMD = 'mkfs.ext4 /dev/sda1'\nos.system(CMD)", RuleFormatDisk, 3},
		{"os.system format", "import os\nos.system('dd if=/dev/zero of=/dev/sda'.format())", RuleDiskWrite, 2},
		{"execvp argv", "import os\nos.execvp('sh', ['sh', '-c', 'reboot'])", RulePower, 2},
		{"execl varargs", "import os\nos.execl('/bin/kill', 'kill', '-9', '-1')", RuleKillAll, 2},
		{"getattr system rm", "import os\ngetattr(os, 'system')('shutdown now')", RulePower, 2},
		{"exec literal with rm", "import os\nexec(\"os.system('rm -rf /')\")", RuleRmRoot, 2},
		{"fork loop", "import os\nwhile True:\n    os.fork()", RuleForkBomb, 2},
		{"fork loop 1", "import os\nwhile 1:\n    if os.fork() == 0:\n        pass", RuleForkBomb, 2},
		{"kill -1", "import os, signal\nos.kill(-1, signal.SIGKILL)", RuleKillAll, 2},
		{"network via shell", "import os\nos.system('wget https://x')", RuleNetwork, 2},
	})
}

func TestPythonClean(t *testing.T) {
	runCleanCases(t, Python, map[string]string{
		"string mentions subprocess": `print("use subprocess to run ls")`,
		"string with code":           `x = "import subprocess; os.system('rm -rf /')"`,
		"docstring":                  "def f():\n    \"\"\"Calls os.system('rm -rf /') -- not really.\"\"\"\n    return 1",
		"comment":                    "# import subprocess\n# os.system('rm -rf /')\nx = 1",
		"open relative":              `open("data.csv")`,
		"open workspace":             `open("/work/out.png", "wb")`,
		"open tmp":                   `open("/tmp/scratch.txt", "w").write("x")`,
		"open subdir":                "with open('results/out.txt', 'w') as f:\n    f.write('x')",
		"os.path and makedirs":       "import os\nos.path.join('a', 'b')\nos.makedirs('out', exist_ok=True)",
		"urllib.parse":               "import urllib.parse\nurllib.parse.quote('a b')",
		"from urllib.parse":          "from urllib.parse import urlparse\nurlparse('https://example.com')",
		"numpy save":                 "import numpy as np\nnp.save('x.npy', np.zeros(3))",
		"pandas":                     "import pandas as pd\ndf = pd.read_csv('data.csv')\ndf.to_csv('/work/out.csv')",
		"matplotlib":                 "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.savefig('/work/plot.png')",
		"split slash":                `parts = "a/b".split("/")`,
		"join slash":                 `p = "/".join(["a", "b"])`,
		"eval literal":               `print(eval("1 + 2"))`,
		"regex compile":              "import re\nre.compile(r'\\d+')",
		"model eval":                 "model.eval()",
		"json":                       "import json\ndata = json.load(open('data.json'))",
		"print url":                  `print("see https://example.com/docs")`,
		"dict get url":               `x = "https://example.com"`,
		"local named like module":    "socket = 3\nprint(socket)",
		"parameter named os":         "def f(os):\n    return os.system",
		"os harmless":                "import os\nprint(os.getcwd(), os.sep, os.environ.get('X'))",
		"sys path":                   "import sys\nsys.path.insert(0, '/usr/lib/python3/dist-packages')",
		"logging dotdot":             "import logging\nlogging.info('see ../docs')",
		"print system path":          `print("edit /etc/hosts to change this")`,
		"startswith system path":     "if p.startswith('/proc/'):\n    pass",
		"regex on path":              "import re\nre.match(r'/etc/(.*)', s)",
		"subprocess constants only":  "x = 1",
		"getattr on object":          "getattr(obj, name)",
		"threads":                    "from concurrent.futures import ThreadPoolExecutor\nThreadPoolExecutor(4)",
		"string replace tilde":       `s = path.replace("~", "home")`,
		"f-string path":              `open(f"{base}/x.txt")`,
		"unicode":                    "s = 'héllo wörld ✓'\nprint(s)",
		"empty":                      "",
	})
}

func TestPythonPositionsAndSnippets(t *testing.T) {
	code := "import json\n\ndef main():\n    data = json.loads('{}')\n    é = 1; os.system('ls')  \n"
	fs := analyze(t, Python, code)
	if len(fs) != 1 {
		t.Fatalf("want 1 finding, got:\n%s", dump(fs))
	}
	f := fs[0]
	if f.Rule != RuleProcessSpawn || f.Line != 5 || f.Column != 12 {
		t.Errorf("got %s at %d:%d, want process.spawn at 5:12 (columns count characters)", f.Rule, f.Line, f.Column)
	}
	if f.Snippet != "é = 1; os.system('ls')" {
		t.Errorf("snippet = %q", f.Snippet)
	}
	if f.Severity != High || !strings.Contains(f.Message, "os.system") {
		t.Errorf("severity %s, message %q", f.Severity, f.Message)
	}
}

func TestPythonCRLF(t *testing.T) {
	fs := analyze(t, Python, "x = 1\r\ny = 2\r\nimport socket\r\n")
	if len(fs) != 1 || fs[0].Line != 3 || fs[0].Snippet != "import socket" {
		t.Fatalf("got:\n%s", dump(fs))
	}
}

func TestPythonSyntaxError(t *testing.T) {
	fs := analyze(t, Python, "x = 1\nprint('a'\ny = 2\n")
	if len(fs) != 1 || fs[0].Rule != RuleSyntaxError || fs[0].Severity != Info {
		t.Fatalf("got:\n%s", dump(fs))
	}
	d := DefaultPolicy().Decide(fs)
	if d.Action != Allow {
		t.Errorf("a syntax error alone is not a policy violation; got %s", d.Action)
	}

	// The token scan still reports dangerous names in code that does not parse.
	fs = analyze(t, Python, "import subprocess\nsubprocess.run(['ls']\n")
	if !hasRule(fs, RuleSyntaxError, 0) || !hasRule(fs, RuleProcessSpawn, 1) {
		t.Fatalf("got:\n%s", dump(fs))
	}
	// ... but not names inside strings.
	fs = analyze(t, Python, "x = 'subprocess'\nif\n")
	if hasRule(fs, RuleProcessSpawn, 0) {
		t.Fatalf("got:\n%s", dump(fs))
	}
}

func TestPythonDeepNesting(t *testing.T) {
	code := "x = " + strings.Repeat("[", 5000) + strings.Repeat("]", 5000)
	fs := analyze(t, Python, code)
	if len(fs) == 0 || (fs[0].Rule != RuleUnavailable && fs[0].Rule != RuleSyntaxError) {
		t.Fatalf("got:\n%s", dump(fs))
	}
}

func TestPythonUnavailable(t *testing.T) {
	r := Reviewer{Python: "/nonexistent/python3"}
	fs, err := r.Analyze(context.Background(), Python, "import os")
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 || fs[0].Rule != RuleUnavailable || !strings.Contains(fs[0].Message, "/nonexistent/python3") {
		t.Fatalf("got:\n%s", dump(fs))
	}
	d, err := r.Review(context.Background(), Python, "import os")
	if err != nil {
		t.Fatal(err)
	}
	if d.Action != Ask {
		t.Errorf("unanalysable code: got %s, want ask", d.Action)
	}
}

// slowPython writes a stand-in interpreter that never answers.
func slowPython(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "python3")
	if err := os.WriteFile(p, []byte("#!/bin/sh\nexec sleep 30\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPythonTimeout(t *testing.T) {
	r := Reviewer{Python: slowPython(t), Timeout: 200 * time.Millisecond}
	start := time.Now()
	fs, err := r.Analyze(context.Background(), Python, "x = 1")
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("the timeout did not bound the run: %s", time.Since(start))
	}
	if len(fs) != 1 || fs[0].Rule != RuleUnavailable || !strings.Contains(fs[0].Message, "timed out") {
		t.Fatalf("got:\n%s", dump(fs))
	}
}

func TestPythonContextCancelled(t *testing.T) {
	r := Reviewer{Python: slowPython(t), Timeout: time.Minute}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := r.Analyze(ctx, Python, "x = 1"); err == nil {
		t.Fatal("want the caller's context error, got nil")
	}
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	if _, err := r.Analyze(ctx, Python, "x = 1"); err == nil {
		t.Fatal("want an error for a cancelled context")
	}
}

func TestAnalyserScriptIsNotRun(t *testing.T) {
	// The analyser parses; it must never execute the code it reviews.
	marker := filepath.Join(t.TempDir(), "ran")
	code := "open(" + strings.ReplaceAll(`"MARK"`, "MARK", marker) + ", 'w').write('x')\nimport os\nos.system('touch " + marker + "')\n"
	analyze(t, Python, code)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the reviewed code ran")
	}
}
