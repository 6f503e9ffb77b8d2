package policy

import (
	"fmt"
	"path"
	"regexp"
	"strings"
	"sync"
)

// This file holds the shell rules: it walks the commands shell_parse.go
// read and reports destructive commands, network use, dynamic code, paths
// outside the workspace, and code in other languages (python3 -c) to be
// reviewed in turn.

// maxNest bounds code nested in strings (bash -c 'bash -c "..."').
const maxNest = 4

// rawFinding is a finding before its snippet is attached.
type rawFinding struct {
	rule      string
	line, col int
	msg       string
	snippet   string // "" for the source line
}

// embedded is code in another language found inside the code under review.
type embedded struct {
	lang Language
	code string
	// Where the code sits in the top-level source. With lineOffset >= 0 the
	// code is a verbatim piece of it (a here-document) and its own positions
	// map by adding lineOffset to the line; otherwise every finding is
	// reported at line and col.
	lineOffset int
	line, col  int
	via        string
}

// shResults collects what the checkers find.
type shResults struct {
	findings []rawFinding
	embeds   []embedded
}

// shChecker reviews parsed shell.
type shChecker struct {
	src   *source // the text positions refer to
	ws    workspace
	res   *shResults
	depth int
	// With atLine > 0 the code was handed over in a string: every finding is
	// reported at that position, with via explaining how it got there.
	atLine, atCol int
	via           string
	cwd           string            // absolute working directory, "" when unknown
	reported      map[int]bool      // word positions a stronger rule already reported
	cur           *shCommand        // the command being checked
	vars          map[string]string // variables with a known static value
}

func newShChecker(src *source, ws workspace, res *shResults) *shChecker {
	return &shChecker{src: src, ws: ws, res: res, cwd: ws.roots[0], reported: make(map[int]bool), vars: make(map[string]string)}
}

func (c *shChecker) report(pos int, rule, msg string) {
	if c.atLine > 0 {
		c.res.findings = append(c.res.findings, rawFinding{rule: rule, line: c.atLine, col: c.atCol, msg: msg + " (" + c.via + ")"})
		return
	}
	line, col := c.src.position(pos)
	c.res.findings = append(c.res.findings, rawFinding{rule: rule, line: line, col: col, msg: msg, snippet: c.commandSnippet()})
}

// commandSnippet shows a command that spans lines (rm -rf \ / on two
// lines) as one line; "" when the source line shows it well enough.
func (c *shChecker) commandSnippet() string {
	cmd := c.cur
	if cmd == nil || cmd.pos < 0 || cmd.end <= cmd.pos || cmd.end > len(c.src.text) {
		return ""
	}
	text := c.src.text[cmd.pos:cmd.end]
	if !strings.Contains(text, "\n") {
		return ""
	}
	text = strings.Join(strings.Fields(strings.ReplaceAll(text, "\\\n", " ")), " ")
	if r := []rune(text); len(r) > maxSnippet {
		text = string(r[:maxSnippet-1]) + "…"
	}
	return text
}

// place returns where code found at pos should be reported.
func (c *shChecker) place(pos int) (line, col int) {
	if c.atLine > 0 {
		return c.atLine, c.atCol
	}
	return c.src.position(pos)
}

// nested reviews shell code handed over in a string at pos.
func (c *shChecker) nested(code string, pos int, via string) {
	if c.depth >= maxNest {
		c.report(pos, RuleDynamicCode, "nests shell code in strings too deeply to review ("+via+")")
		return
	}
	sub := newShChecker(newSource(code), c.ws, c.res)
	sub.depth = c.depth + 1
	sub.cwd = c.cwd
	for k, v := range c.vars {
		sub.vars[k] = v
	}
	if c.atLine > 0 {
		sub.atLine, sub.atCol, sub.via = c.atLine, c.atCol, c.via
	} else {
		sub.atLine, sub.atCol = c.src.position(pos)
		sub.via = "in the script passed to " + via
	}
	sub.check(parseShell(code))
}

// embed records code in another language for review.
func (c *shChecker) embed(lang Language, code string, pos int, via string) {
	line, col := c.place(pos)
	e := embedded{lang: lang, code: code, lineOffset: -1, line: line, col: col, via: "in the code passed to " + via}
	if c.atLine > 0 {
		e.via = c.via
	}
	c.res.embeds = append(c.res.embeds, e)
}

// check reviews a script and everything nested in it.
func (c *shChecker) check(sc *shScript) {
	if len(sc.errs) > 0 {
		e := sc.errs[0]
		c.report(e.pos, RuleSyntaxError, "the shell code does not parse ("+e.msg+"); the shell still runs the commands before the error, and everything was reviewed as far as it could be read")
	}
	c.checkForkBombs(sc)
	for _, cmd := range sc.cmds {
		c.command(cmd)
	}
	c.checkPipelines(sc)
}

// substitute replaces parameters whose value is known: after a=rm, the
// word $a is rm.
func (c *shChecker) substitute(w shWord) shWord {
	var segs []segment
	for i, s := range w.segs {
		v, ok := c.vars[s.text]
		if s.kind != segParam || !ok {
			if segs != nil {
				segs = append(segs, s)
			}
			continue
		}
		if segs == nil {
			segs = append([]segment{}, w.segs[:i]...)
		}
		segs = append(segs, segment{kind: segLit, text: v, quoted: true})
	}
	if segs != nil {
		w.segs = segs
	}
	return w
}

// braceGroup matches one brace expansion with a comma: {rm,-rf,/}, /{etc,usr}.
var braceGroup = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\{([^{}]*,[^{}]*)\}`) })

// expandBraces performs bash's brace expansion on static words whose first
// unquoted piece holds one group: {rm,-rf,/} is three words.
func expandBraces(ws []shWord) []shWord {
	var out []shWord
	for _, w := range ws {
		s, ok := w.static()
		i := -1
		for k, seg := range w.segs {
			if seg.kind == segLit && !seg.quoted && braceGroup().MatchString(seg.text) {
				i = k
				break
			}
		}
		if !ok || i < 0 {
			out = append(out, w)
			continue
		}
		prefix := ""
		for _, seg := range w.segs[:i] {
			prefix += seg.text
		}
		m := braceGroup().FindStringSubmatchIndex(w.segs[i].text)
		head := prefix + w.segs[i].text[:m[0]]
		tail := s[len(head)+m[1]-m[0]:]
		for _, alt := range strings.Split(w.segs[i].text[m[2]:m[3]], ",") {
			out = append(out, shWord{pos: w.pos, end: w.end, segs: []segment{{kind: segLit, text: head + alt + tail, quoted: true}}})
		}
	}
	return out
}

// assign records NAME=value words.
func (c *shChecker) assign(ws []shWord) {
	for _, w := range ws {
		if !isAssignment(w) {
			continue
		}
		first := w.segs[0].text
		i := strings.IndexByte(first, '=')
		name := strings.TrimSuffix(first[:i], "+")
		rest := w
		rest.segs = append([]segment{{kind: segLit, text: first[i+1:]}}, w.segs[1:]...)
		if v, ok := rest.static(); ok && !strings.Contains(first[:i], "+") {
			c.vars[name] = v
		} else {
			delete(c.vars, name)
		}
	}
}

// checkWords reviews scripts nested in words: $(...), `...`, <(...).
func (c *shChecker) checkWords(ws []shWord) {
	for _, w := range ws {
		for _, sub := range w.subs() {
			c.check(sub)
		}
	}
}

// resolve finds the command word behind wrappers like sudo, env and nohup.
// It returns the index of the command word and the command's family name,
// or -1 if there is none.
func resolve(words []shWord) (int, string) {
	i := 0
	for guard := 0; i < len(words) && guard < 16; guard++ {
		name := commandName(words[i])
		switch name {
		case "sudo", "doas":
			i = skipOptions(words, i+1, "-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T")
			for i < len(words) && isAssignment(words[i]) {
				i++
			}
		case "env":
			i = skipOptions(words, i+1, "-u", "-C", "-S", "--unset", "--chdir", "--split-string")
			for i < len(words) && isAssignment(words[i]) {
				i++
			}
		case "nice":
			i = skipOptions(words, i+1, "-n", "--adjustment")
		case "nohup", "setsid", "unbuffer", "builtin", "exec", "time", "stdbuf", "ionice", "strace", "ltrace", "chronic":
			i = skipOptions(words, i+1, "-a", "-i", "-o", "-e", "-c", "-n", "-p", "-f", "-s", "-E", "-u")
		case "command":
			j := skipOptions(words, i+1)
			for _, w := range words[i+1 : j] {
				if s, _ := w.static(); s == "-v" || s == "-V" {
					return i, name // only looks the command up
				}
			}
			i = j
		case "timeout":
			i = skipOptions(words, i+1, "-s", "-k", "--signal", "--kill-after") + 1
		case "xargs":
			i = skipOptions(words, i+1, "-I", "-n", "-P", "-d", "-a", "-E", "-L", "-s", "--max-args", "--max-procs", "--delimiter", "--arg-file", "--replace")
		case "flock":
			i = skipOptions(words, i+1, "-w", "-E", "--timeout") + 1
		case "chroot":
			i = skipOptions(words, i+1, "--userspec", "--groups") + 1
		case "taskset":
			i = skipOptions(words, i+1)
			if i < len(words) {
				i++ // the mask
			}
		case "busybox":
			i++
		default:
			return i, family(name)
		}
	}
	return -1, ""
}

// skipOptions skips option words from i; options in withArg take the next word.
func skipOptions(words []shWord, i int, withArg ...string) int {
	for i < len(words) {
		s, ok := words[i].static()
		if !ok || len(s) < 2 || s[0] != '-' {
			return i
		}
		if s == "--" {
			return i + 1
		}
		i++
		for _, o := range withArg {
			if s == o {
				i++
				break
			}
		}
	}
	return i
}

// commandName is the name a command word runs: the base name of a static
// word, "$0" for the script itself, "" when computed at run time.
func commandName(w shWord) string {
	if s, ok := w.static(); ok {
		return path.Base(s)
	}
	if name, rest, ok := w.param(); ok && name == "0" && rest == "" {
		return "$0"
	}
	return ""
}

var (
	pythonName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(python|pypy|ipython)[0-9.]*$`) })
	pipName    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^pip[0-9.]*$`) })
)

// family folds versions and variants: python3.11 is python, mkfs.ext4 is mkfs.
func family(name string) string {
	switch {
	case pythonName().MatchString(name):
		return "python"
	case pipName().MatchString(name):
		return "pip"
	case strings.HasPrefix(name, "mkfs."):
		return "mkfs"
	}
	return name
}

var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "mksh": true, "ash": true, "fish": true, "csh": true, "tcsh": true}

// interpreters run a script they read: shells and scripting languages.
var interpreters = map[string]bool{"python": true, "perl": true, "ruby": true, "node": true, "nodejs": true, "php": true, "lua": true}

var downloaders = map[string]bool{"curl": true, "wget": true, "fetch": true, "aria2c": true, "nc": true, "ncat": true, "netcat": true, "socat": true}

var networkCommands = map[string]string{
	"curl": "transfers data over the network", "wget": "downloads from the network",
	"fetch": "downloads from the network", "aria2c": "downloads from the network",
	"nc": "opens raw network connections", "ncat": "opens raw network connections",
	"netcat": "opens raw network connections", "socat": "relays network connections",
	"ssh": "logs in to another machine", "scp": "copies files over the network",
	"sftp": "copies files over the network", "telnet": "opens a network connection",
	"ftp": "transfers files over the network", "lftp": "transfers files over the network",
	"nmap": "scans the network", "ping": "sends packets over the network",
	"ping6": "sends packets over the network", "dig": "queries DNS servers",
	"nslookup": "queries DNS servers", "whois": "queries whois servers",
	"npx": "downloads and runs packages from the network",
}

// packageVerbs are subcommands that fetch from the network, per package tool.
var packageVerbs = map[string][]string{
	"pip":        {"install", "download", "wheel"},
	"npm":        {"install", "i", "ci", "add", "update", "exec"},
	"pnpm":       {"install", "i", "add", "update", "dlx"},
	"yarn":       {"install", "add", "upgrade", "dlx"},
	"apt":        {"install", "update", "upgrade", "full-upgrade", "dist-upgrade", "download", "source"},
	"apt-get":    {"install", "update", "upgrade", "dist-upgrade", "download", "source", "build-dep"},
	"aptitude":   {"install", "update", "upgrade"},
	"conda":      {"install", "create", "update"},
	"mamba":      {"install", "create", "update"},
	"micromamba": {"install", "create", "update"},
	"gem":        {"install", "update"},
	"cargo":      {"install", "add", "fetch"},
	"go":         {"get", "install", "download"},
	"git":        {"clone", "fetch", "pull", "push", "ls-remote", "submodule"},
}

var formatCommands = map[string]bool{
	"mkfs": true, "mke2fs": true, "mkswap": true, "mkdosfs": true, "mkntfs": true, "mkexfatfs": true,
	"fdisk": true, "sfdisk": true, "cfdisk": true, "parted": true, "gdisk": true, "sgdisk": true,
	"wipefs": true, "blkdiscard": true,
}

var powerCommands = map[string]bool{"shutdown": true, "reboot": true, "halt": true, "poweroff": true, "kexec": true}

// noPathArgs are commands whose arguments are text, not files.
var noPathArgs = map[string]bool{
	"echo": true, "printf": true, "export": true, "declare": true, "local": true, "readonly": true,
	"typeset": true, "alias": true, "unset": true, "eval": true, "exit": true, "return": true,
	"shift": true, "read": true, "set": true, "trap": true, "type": true, "which": true,
	"command": true, "hash": true, "kill": true, "true": true, "false": true, ":": true,
	"[": true, "test": true, "basename": true, "dirname": true,
}

// patternFirst are commands whose first operand is a pattern or program, not a file.
var patternFirst = map[string]bool{
	"grep": true, "egrep": true, "fgrep": true, "rg": true, "sed": true, "awk": true,
	"gawk": true, "mawk": true, "jq": true, "perl": true,
}

// staticArgs returns the static values of words; computed words are "".
func staticArgs(ws []shWord) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i], _ = w.static()
	}
	return out
}

// operands returns the words that are not options.
func operands(ws []shWord) []shWord {
	var out []shWord
	end := false
	for _, w := range ws {
		s, ok := w.static()
		if !end && ok && s == "--" {
			end = true
			continue
		}
		if !end && ok && len(s) > 1 && s[0] == '-' {
			continue
		}
		out = append(out, w)
	}
	return out
}

// command reviews one simple command.
func (c *shChecker) command(cmd *shCommand) {
	c.checkWords(cmd.assigns)
	c.cur = cmd
	defer func() { c.cur = nil }()
	c.checkWords(cmd.words)
	cmd.words = expandBraces(cmd.words)
	for i := range cmd.words {
		cmd.words[i] = c.substitute(cmd.words[i])
	}
	for _, r := range cmd.redirs {
		r.target = c.substitute(r.target)
	}
	if len(cmd.words) == 0 {
		c.assign(cmd.assigns)
	}
	if cmd.keyword && len(cmd.words) > 1 {
		if s, _ := cmd.words[0].static(); s == "for" || s == "select" {
			if v, ok := cmd.words[1].static(); ok {
				delete(c.vars, v)
			}
		}
	}
	for _, r := range cmd.redirs {
		c.checkWords([]shWord{r.target})
	}
	idx, name := -1, ""
	if !cmd.keyword {
		idx, name = resolve(cmd.words)
	}
	var args []shWord
	if idx >= 0 {
		args = cmd.words[idx+1:]
	}
	for _, r := range cmd.redirs {
		c.redirect(cmd, r, name, args)
	}
	if idx < 0 {
		return
	}
	cw := cmd.words[idx]
	if name == "" && hasDownloader(cw.subs()) {
		c.report(cw.pos, RulePipeToShell, "runs the output of a download as a command")
	}
	argv := staticArgs(args)
	pathArgs := !noPathArgs[name]
	switch {
	case name == "rm":
		c.checkRm(cmd, args)
	case name == "chmod" || name == "chown" || name == "chgrp":
		c.checkChmod(cmd, name, args)
	case name == "find":
		c.checkFind(cmd, args)
	case name == "dd":
		c.checkDD(args)
	case formatCommands[name]:
		pathArgs = false
		if !(name == "fdisk" || name == "sfdisk" || name == "parted" || name == "gdisk" || name == "sgdisk") || !containsAny(argv, "-l", "--list", "-p", "print") {
			c.report(cmd.pos, RuleFormatDisk, name+" formats or repartitions a disk")
		}
	case name == "shred" || name == "tee" || name == "cp" || name == "mv" || name == "install" || name == "pv":
		for _, w := range operands(args) {
			if s, ok := w.static(); ok && diskDevice().MatchString(s) {
				c.report(w.pos, RuleDiskWrite, name+" writes to the device "+s+", destroying what is on it")
				c.reported[w.pos] = true
			}
		}
	case powerCommands[name]:
		c.report(cmd.pos, RulePower, name+" shuts down or restarts the machine")
	case name == "init" || name == "telinit":
		if containsAny(argv, "0", "6") {
			c.report(cmd.pos, RulePower, name+" shuts down or restarts the machine")
		}
	case name == "systemctl":
		if containsAny(argv, "poweroff", "reboot", "halt", "kexec", "suspend", "hibernate", "hybrid-sleep", "emergency", "rescue") {
			c.report(cmd.pos, RulePower, "systemctl shuts down, suspends or restarts the machine")
		}
	case name == "export" || name == "local" || name == "declare" || name == "readonly" || name == "typeset":
		c.assign(args)
	case name == "unset" || name == "read":
		for _, s := range argv {
			delete(c.vars, s)
		}
	case name == "trap":
		if ops := operands(args); len(ops) > 1 {
			if s, ok := ops[0].static(); ok && s != "" && s != "-" {
				c.nested(s, ops[0].pos, "trap")
			}
		}
	case name == "alias":
		for _, w := range args {
			if s, ok := w.static(); ok {
				if _, body, found := strings.Cut(s, "="); found {
					c.nested(body, w.pos, "alias")
				}
			}
		}
	case name == "su":
		for j, s := range argv {
			if (s == "-c" || s == "--command") && j+1 < len(args) {
				if v, ok := args[j+1].static(); ok {
					c.nested(v, args[j+1].pos, "su -c")
				}
			} else if v, found := strings.CutPrefix(s, "--command="); found {
				c.nested(v, args[j].pos, "su -c")
			}
		}
		pathArgs = false
	case name == "watch":
		ops := args[skipOptions(args, 0, "-n", "--interval"):]
		var parts []string
		for _, w := range ops {
			s, ok := w.static()
			if !ok {
				parts = nil
				break
			}
			parts = append(parts, s)
		}
		if len(parts) > 0 {
			c.nested(strings.Join(parts, " "), ops[0].pos, "watch")
		}
		pathArgs = false
	case name == "kill":
		c.checkKill(cmd, argv)
	case name == "killall5":
		c.report(cmd.pos, RuleKillAll, "killall5 signals every process on the system")
	case name == "eval":
		c.checkEval(cmd, args)
		pathArgs = false
	case shells[name]:
		c.checkShell(cmd, name, args)
		pathArgs = false
	case name == "python":
		c.checkPython(cmd, args)
		pathArgs = false
	case name == "source" || name == ".":
		for _, w := range args {
			if hasDownloader(w.subs()) {
				c.report(cmd.pos, RulePipeToShell, name+" runs a script straight from a download")
			}
		}
	case name == "rsync":
		for _, s := range argv {
			if strings.Contains(s, "::") || strings.Contains(s, "://") || remoteSpec().MatchString(s) {
				c.report(cmd.pos, RuleNetwork, "rsync copies files over the network")
				break
			}
		}
	case networkCommands[name] != "":
		c.report(cmd.pos, RuleNetwork, name+" "+networkCommands[name])
	case packageVerbs[name] != nil:
		c.checkPackages(cmd, name, argv)
	}
	if name == "cd" {
		c.checkPaths(name, args)
		c.chdir(args)
		return
	}
	if pathArgs {
		c.checkPaths(name, args)
	}
}

// remoteSpec matches rsync and scp's host:path.
var remoteSpec = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([A-Za-z0-9._-]+@)?[A-Za-z0-9._-]+:`) })

func containsAny(list []string, want ...string) bool {
	for _, s := range list {
		for _, w := range want {
			if s == w {
				return true
			}
		}
	}
	return false
}

// hasDownloader reports whether any of the scripts runs a downloader.
func hasDownloader(scs []*shScript) bool {
	for _, sc := range scs {
		for _, cmd := range sc.cmds {
			if i, name := resolve(cmd.words); i >= 0 && downloaders[name] {
				return true
			}
			for _, w := range cmd.words {
				if hasDownloader(w.subs()) {
					return true
				}
			}
		}
	}
	return false
}

// redirect reviews one redirection of cmd, whose command family is name.
func (c *shChecker) redirect(cmd *shCommand, r *shRedir, name string, args []shWord) {
	runsStdin := (shells[name] || name == "python") && readsStdin(name, args)
	switch r.op {
	case "<<", "<<-":
		h := r.heredoc
		if h == nil || !runsStdin {
			return
		}
		if shells[name] {
			if c.atLine > 0 {
				c.nested(h.body, r.pos, name+" <<"+h.delim)
			} else {
				c.check(parseAt(h.body, h.bodyPos))
			}
			return
		}
		line, col := c.place(h.bodyPos)
		body := h.body
		if h.strip {
			lines := strings.Split(body, "\n")
			for i, l := range lines {
				lines[i] = strings.TrimLeft(l, "\t")
			}
			body = strings.Join(lines, "\n")
		}
		e := embedded{lang: Python, code: body, lineOffset: -1, line: line, col: col, via: "in the here-document passed to " + name}
		if c.atLine > 0 {
			e.via = c.via
		} else {
			e.lineOffset = line - 1
		}
		c.res.embeds = append(c.res.embeds, e)
		return
	case "<<<":
		if !runsStdin {
			return
		}
		if s, ok := r.target.static(); ok {
			if shells[name] {
				c.nested(s, r.target.pos, name+" <<<")
			} else {
				c.embed(Python, s, r.target.pos, name+" <<<")
			}
		} else if hasDownloader(r.target.subs()) {
			c.report(r.pos, RulePipeToShell, name+" runs a script straight from a download")
		} else {
			c.report(r.pos, RuleDynamicCode, name+" runs a script built at run time")
		}
		return
	}
	if r.op == "<" && runsStdin && hasDownloader(r.target.subs()) {
		c.report(r.pos, RulePipeToShell, name+" runs a script straight from a download")
		return
	}
	if (r.op == ">&" || r.op == "<&") && !r.output() {
		return // duplicates a descriptor
	}
	p, unknown := c.wordPath(r.target)
	if unknown < 0 && r.output() {
		switch {
		case diskDevice().MatchString(p):
			c.report(r.pos, RuleDiskWrite, "writes to the device "+p+", destroying what is on it")
			return
		case p == "/proc/sysrq-trigger":
			c.report(r.pos, RulePower, "writes to /proc/sysrq-trigger, which can reboot or crash the machine at once")
			return
		}
	}
	if strings.HasPrefix(p, "/dev/tcp/") || strings.HasPrefix(p, "/dev/udp/") {
		c.report(r.pos, RuleNetwork, "opens a network connection through "+p)
		return
	}
	c.classify(r.target.pos, p, unknown)
}

// readsStdin reports whether an interpreter with these arguments runs the
// program it reads on standard input.
func readsStdin(name string, args []shWord) bool {
	for _, w := range args {
		s, ok := w.static()
		if !ok {
			return false
		}
		switch {
		case s == "-" || s == "/dev/stdin" || s == "-s":
			return true
		case s == "--":
			continue
		case strings.HasPrefix(s, "-"):
			if name != "python" && !strings.HasPrefix(s, "--") && strings.Contains(s, "c") {
				return false // -c: the program is an argument
			}
			if name == "python" && (s == "-c" || s == "-m") {
				return false
			}
			continue
		default:
			return false // a script file
		}
	}
	return true
}

// wordPath is the word as a path: its known leading text and where the
// unknown part starts (-1 if none). A quoted leading "~" is a file name.
func (c *shChecker) wordPath(w shWord) (string, int) {
	if name, _, ok := w.param(); ok && name == "HOME" || len(w.segs) > 0 && w.segs[0].kind == segParam && w.segs[0].text == "HOME" && w.segs[0].deflt == nil {
		// $HOME/... is the home directory, as ~/... is
		rest := w
		rest.segs = append([]segment{{kind: segTilde, text: "~"}}, w.segs[1:]...)
		return rest.pathText()
	}
	p, unknown := w.pathText()
	if len(w.segs) > 0 && w.segs[0].kind == segLit && strings.HasPrefix(p, "~") {
		p = "./" + p
		if unknown >= 0 {
			unknown += 2
		}
	}
	return p, unknown
}

// classify reports a path outside the workspace.
func (c *shChecker) classify(pos int, p string, unknown int) {
	if p == "" || c.reported[pos] || strings.Contains(p, "://") {
		return
	}
	if !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "~") {
		if !strings.Contains(p, "..") || c.cwd == "" {
			return
		}
	}
	v := c.ws.classify(p, unknown < 0, unknown, c.cwd, pathCheck{fileAPI: true})
	if v.rule != "" {
		c.report(pos, v.rule, v.message)
	}
}

// checkPaths reviews the arguments of a command as file paths.
func (c *shChecker) checkPaths(name string, args []shWord) {
	skipFirst := patternFirst[name]
	end := false
	for _, w := range args {
		s, ok := w.static()
		if !end && ok && s == "--" {
			end = true
			continue
		}
		if !end && ok && strings.HasPrefix(s, "-") {
			if i := strings.IndexByte(s, '='); i > 0 && strings.HasPrefix(s, "--") {
				c.classify(w.pos, s[i+1:], -1)
			}
			continue
		}
		if skipFirst {
			skipFirst = false
			continue
		}
		p, unknown := c.wordPath(w)
		if strings.HasPrefix(p, "/dev/tcp/") || strings.HasPrefix(p, "/dev/udp/") {
			c.report(w.pos, RuleNetwork, "opens a network connection through "+p)
			continue
		}
		c.classify(w.pos, p, unknown)
	}
}

// chdir follows cd so that later relative paths resolve.
func (c *shChecker) chdir(args []shWord) {
	ops := operands(args)
	if len(ops) == 0 {
		c.cwd = "" // home
		return
	}
	p, unknown := c.wordPath(ops[0])
	if unknown >= 0 || p == "-" || strings.HasPrefix(p, "~") || c.cwd == "" && !strings.HasPrefix(p, "/") {
		c.cwd = ""
		return
	}
	c.cwd = c.ws.resolve(p, c.cwd)
}

// destroys describes the target if removing or re-permissioning it
// recursively would wreck the system: "/", "/etc", "~", "$DIR/" with DIR
// empty. It returns "" otherwise.
func (c *shChecker) destroys(w shWord) string {
	if name, rest, ok := w.param(); ok && name == "HOME" {
		if rest == "" || rest == "/" || rest == "/*" || rest == "/.*" {
			return "the home directory ($HOME" + rest + ")"
		}
	}
	p, unknown := c.wordPath(w)
	if unknown < 0 {
		if !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "~") && c.cwd == "" {
			return ""
		}
		abs := p
		if !strings.HasPrefix(p, "~") {
			abs = c.ws.resolve(p, c.cwd)
			if strings.HasSuffix(p, "/*") && !strings.HasSuffix(abs, "/*") {
				abs = strings.TrimSuffix(abs, "/") + "/*"
			}
		}
		if rootish(abs) {
			if abs != p && !strings.HasPrefix(p, "/") {
				return p + " (" + abs + ")"
			}
			return p
		}
		return ""
	}
	// Partly computed: what if every parameter in it were empty?
	m := w.minimal()
	if strings.HasPrefix(m, "/") && rootish(m) {
		if v := w.mayBeEmptyParam(); v != "" {
			return w.text() + ", which is " + m + " if $" + v + " is empty or unset"
		}
		return w.text()
	}
	return ""
}

func (c *shChecker) checkRm(cmd *shCommand, args []shWord) {
	recursive, noPreserve := false, false
	var targets []shWord
	end := false
	for _, w := range args {
		s, ok := w.static()
		switch {
		case !end && ok && s == "--":
			end = true
		case !end && ok && strings.HasPrefix(s, "--"):
			recursive = recursive || s == "--recursive"
			noPreserve = noPreserve || s == "--no-preserve-root"
		case !end && ok && len(s) > 1 && s[0] == '-':
			recursive = recursive || strings.ContainsAny(s, "rR")
		default:
			targets = append(targets, w)
		}
	}
	if !recursive && !noPreserve {
		return
	}
	for _, w := range targets {
		if what := c.destroys(w); what != "" {
			c.report(w.pos, RuleRmRoot, "rm recursively removes "+what)
			c.reported[w.pos] = true
		}
	}
	if noPreserve && len(targets) == 0 {
		c.report(cmd.pos, RuleRmRoot, "rm --no-preserve-root disables the guard against removing /")
	}
}

func (c *shChecker) checkChmod(cmd *shCommand, name string, args []shWord) {
	recursive, reference := false, false
	var ops []shWord
	for _, w := range args {
		s, ok := w.static()
		switch {
		case ok && (s == "--recursive" || len(s) > 1 && s[0] == '-' && s[1] != '-' && strings.Contains(s, "R")):
			recursive = true
		case ok && strings.HasPrefix(s, "--reference="):
			reference = true
		case ok && len(s) > 1 && s[0] == '-' && (s[1] == '-' || name != "chmod" || strings.Trim(s[1:], "rwxXstugo") == ""):
			// an option, or a chmod mode like -w
			if name == "chmod" && s[1] != '-' && strings.Trim(s[1:], "rwxXstugo") == "" && len(ops) == 0 {
				ops = append(ops, w) // -w is the mode
			}
		default:
			ops = append(ops, w)
		}
	}
	if !recursive {
		return
	}
	if !reference && len(ops) > 0 {
		ops = ops[1:] // the mode or owner
	}
	for _, w := range ops {
		if what := c.destroys(w); what != "" {
			c.report(w.pos, RuleChmodRoot, name+" recursively changes "+what)
			c.reported[w.pos] = true
		}
	}
}

func (c *shChecker) checkFind(cmd *shCommand, args []shWord) {
	var starts []shWord
	i := 0
	for ; i < len(args); i++ {
		s, ok := args[i].static()
		if ok && (strings.HasPrefix(s, "-") || s == "(" || s == "!") {
			break
		}
		starts = append(starts, args[i])
	}
	deletes := false
	argv := staticArgs(args[i:])
	for j, s := range argv {
		if s == "-delete" {
			deletes = true
		}
		if (s == "-exec" || s == "-execdir" || s == "-ok" || s == "-okdir") && j+1 < len(argv) && path.Base(argv[j+1]) == "rm" {
			deletes = true
		}
	}
	if !deletes {
		return
	}
	for _, w := range starts {
		if what := c.destroys(w); what != "" {
			c.report(w.pos, RuleRmRoot, "find deletes everything under "+what)
			c.reported[w.pos] = true
		}
	}
}

func (c *shChecker) checkDD(args []shWord) {
	for _, w := range args {
		s, ok := w.static()
		if !ok {
			continue
		}
		if v, found := strings.CutPrefix(s, "of="); found {
			if diskDevice().MatchString(v) {
				c.report(w.pos, RuleDiskWrite, "dd writes to the device "+v+", destroying what is on it")
				c.reported[w.pos] = true
				continue
			}
			c.classify(w.pos, v, -1)
		}
		if v, found := strings.CutPrefix(s, "if="); found {
			c.classify(w.pos, v, -1)
		}
	}
}

func (c *shChecker) checkKill(cmd *shCommand, argv []string) {
	i := 0
	if len(argv) > 0 {
		switch {
		case argv[0] == "-s" || argv[0] == "-n":
			i = 2
		case argv[0] == "-l" || argv[0] == "-L":
			return
		case len(argv[0]) > 1 && argv[0][0] == '-' && argv[0] != "--":
			i = 1 // -9, -KILL, -SIGKILL
		}
	}
	for ; i < len(argv); i++ {
		if argv[i] == "--" {
			continue
		}
		if argv[i] == "-1" {
			c.report(cmd.pos, RuleKillAll, "kill -1 signals every process the user may signal")
			return
		}
	}
}

func (c *shChecker) checkEval(cmd *shCommand, args []shWord) {
	if len(args) == 0 {
		return
	}
	var parts []string
	for _, w := range args {
		s, ok := w.static()
		if !ok {
			if hasDownloader(w.subs()) {
				c.report(cmd.pos, RulePipeToShell, "eval runs a script straight from a download")
			} else {
				c.report(cmd.pos, RuleDynamicCode, "eval runs a command built at run time ("+w.text()+")")
			}
			return
		}
		parts = append(parts, s)
	}
	c.nested(strings.Join(parts, " "), args[0].pos, "eval")
}

// scriptArg finds the -c argument of a shell or python command.
func scriptArg(args []shWord, python bool) (int, bool) {
	for j, w := range args {
		s, ok := w.static()
		if !ok || !strings.HasPrefix(s, "-") || s == "-" {
			return -1, false
		}
		if s == "--" {
			return -1, false
		}
		isC := s == "-c"
		if !python && !strings.HasPrefix(s, "--") && strings.Contains(s, "c") {
			isC = true
		}
		if isC {
			if j+1 < len(args) {
				return j + 1, true
			}
			return -1, true
		}
		if python && (s == "-m" || s == "-W" || s == "-X") {
			return -1, false
		}
	}
	return -1, false
}

func (c *shChecker) checkShell(cmd *shCommand, name string, args []shWord) {
	j, hasC := scriptArg(args, false)
	if hasC && j >= 0 {
		w := args[j]
		if s, ok := w.static(); ok {
			c.nested(s, w.pos, name+" -c")
		} else if hasDownloader(w.subs()) {
			c.report(cmd.pos, RulePipeToShell, name+" -c runs a script straight from a download")
		} else {
			c.report(cmd.pos, RuleDynamicCode, name+" -c runs a command built at run time ("+w.text()+")")
		}
		return
	}
	for _, w := range operands(args) {
		if hasDownloader(w.subs()) {
			c.report(cmd.pos, RulePipeToShell, name+" runs a script straight from a download")
		}
		break
	}
}

func (c *shChecker) checkPython(cmd *shCommand, args []shWord) {
	j, hasC := scriptArg(args, true)
	if hasC && j >= 0 {
		w := args[j]
		if s, ok := w.static(); ok {
			c.embed(Python, s, w.pos, "python -c")
		} else if hasDownloader(w.subs()) {
			c.report(cmd.pos, RulePipeToShell, "python -c runs a program straight from a download")
		} else {
			c.report(cmd.pos, RuleDynamicCode, "python -c runs a program built at run time ("+w.text()+")")
		}
		return
	}
	argv := staticArgs(args)
	for k, s := range argv {
		if s == "-m" && k+1 < len(argv) {
			switch argv[k+1] {
			case "pip":
				c.checkPackages(cmd, "pip", argv[k+2:])
			case "http.server", "smtpd", "ftplib", "telnetlib":
				c.report(cmd.pos, RuleNetwork, "python -m "+argv[k+1]+" uses the network")
			}
			return
		}
	}
	for _, w := range operands(args) {
		if hasDownloader(w.subs()) {
			c.report(cmd.pos, RulePipeToShell, "python runs a program straight from a download")
		}
		break
	}
}

func (c *shChecker) checkPackages(cmd *shCommand, name string, argv []string) {
	verbs := packageVerbs[name]
	if containsAny(argv, "--no-index", "--offline") {
		return
	}
	for i := 0; i < len(argv); i++ {
		s := argv[i]
		if strings.HasPrefix(s, "-") {
			if name == "git" && (s == "-C" || s == "-c" || s == "--git-dir" || s == "--work-tree") {
				i++ // the option's value
			}
			continue
		}
		for _, v := range verbs {
			if s == v {
				what := "downloads packages from the network"
				if name == "git" {
					what = "talks to a remote repository over the network"
				}
				c.report(cmd.pos, RuleNetwork, fmt.Sprintf("%s %s %s", name, s, what))
				return
			}
		}
		if name == "git" || name == "go" || name == "cargo" || name == "gem" {
			return // the first operand is the subcommand
		}
	}
}

// checkForkBombs finds functions that call themselves more than once, or in
// the background or a pipeline: :(){ :|:& };:
func (c *shChecker) checkForkBombs(sc *shScript) {
	pipeSize := make(map[int]int)
	for _, cmd := range sc.cmds {
		if n := len(cmd.pipes); n > 0 {
			pipeSize[cmd.pipes[n-1].pipe]++
		}
	}
	inPipe := func(cmd *shCommand) bool {
		n := len(cmd.pipes)
		return n > 0 && pipeSize[cmd.pipes[n-1].pipe] > 1
	}
	for _, f := range sc.funcs {
		calls, forks := 0, false
		for _, cmd := range sc.cmds {
			if cmd.fn != f.name || len(cmd.words) == 0 {
				continue
			}
			if i, name := resolve(cmd.words); i >= 0 && commandName(cmd.words[i]) == f.name && name != "" {
				calls++
				forks = forks || cmd.background || inPipe(cmd)
			}
		}
		if calls >= 2 || forks {
			c.report(f.pos, RuleForkBomb, "the function "+f.name+" starts copies of itself without end (a fork bomb)")
		}
	}
	for _, cmd := range sc.cmds {
		if len(cmd.words) > 0 && commandName(cmd.words[0]) == "$0" && (cmd.background || inPipe(cmd)) {
			c.report(cmd.pos, RuleForkBomb, "the script starts copies of itself ($0) in the background (a fork bomb)")
			return
		}
	}
}

// checkPipelines finds downloads piped into an interpreter: curl ... | sh.
func (c *shChecker) checkPipelines(sc *shScript) {
	type stageCmd struct {
		stage int
		cmd   *shCommand
	}
	pipes := make(map[int][]stageCmd)
	var order []int
	for _, cmd := range sc.cmds {
		for _, ref := range cmd.pipes {
			if _, ok := pipes[ref.pipe]; !ok {
				order = append(order, ref.pipe)
			}
			pipes[ref.pipe] = append(pipes[ref.pipe], stageCmd{ref.stage, cmd})
		}
	}
	done := make(map[*shCommand]bool)
	for _, id := range order {
		first := -1
		var from *shCommand
		byStage := make(map[int][]*shCommand)
		for _, m := range pipes[id] {
			byStage[m.stage] = append(byStage[m.stage], m.cmd)
		}
		for _, m := range pipes[id] {
			i, name := resolve(m.cmd.words)
			if i < 0 {
				continue
			}
			if downloaders[name] && (first < 0 || m.stage < first) {
				first, from = m.stage, m.cmd
				continue
			}
			args := m.cmd.words[i+1:]
			runs := (shells[name] || interpreters[name]) && readsStdin(name, args)
			if (name == "source" || name == ".") && len(args) > 0 {
				s, _ := args[0].static()
				runs = s == "/dev/stdin" || s == "-"
			}
			if !runs || m.stage == 0 || done[m.cmd] {
				continue
			}
			done[m.cmd] = true
			if first >= 0 && m.stage > first {
				c.report(from.pos, RulePipeToShell, "pipes a download straight into "+name+", running code nobody has reviewed")
				continue
			}
			prev := byStage[m.stage-1]
			if len(prev) != 1 {
				continue // a compound command feeds it: what it prints is not known
			}
			c.pipedInto(prev[0], m.cmd, name)
		}
	}
}

// decoders turn text into other text: piping their output into a shell
// hides what runs.
var decoders = map[string]bool{
	"base64": true, "base32": true, "xxd": true, "openssl": true, "rev": true, "tr": true,
	"gunzip": true, "zcat": true, "gzip": true, "bzip2": true, "bzcat": true, "xz": true,
	"xzcat": true, "uudecode": true, "basenc": true,
}

// pipedInto reviews what from prints into the interpreter to, when that is
// known: echo 'rm -rf /' | sh.
func (c *shChecker) pipedInto(from, to *shCommand, name string) {
	i, fname := resolve(from.words)
	if i < 0 {
		return
	}
	args := from.words[i+1:]
	switch {
	case fname == "echo" || fname == "printf":
		var parts []string
		for _, w := range operands(args) {
			s, ok := w.static()
			if !ok {
				c.report(to.pos, RuleDynamicCode, fname+" pipes text built at run time into "+name)
				return
			}
			parts = append(parts, s)
		}
		text := strings.Join(parts, " ")
		if fname == "printf" || containsAny(staticArgs(args), "-e") {
			text = strings.NewReplacer(`\n`, "\n", `\t`, "\t").Replace(text)
		}
		if shells[name] {
			c.nested(text, from.pos, fname+" | "+name)
		} else if name == "python" {
			c.embed(Python, text, from.pos, fname+" | "+name)
		}
	case decoders[fname]:
		c.report(to.pos, RuleDynamicCode, fname+" decodes text that is piped into "+name+", hiding what runs")
	}
}
