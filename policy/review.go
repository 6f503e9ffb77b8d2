package policy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// DefaultTimeout bounds one run of the Python analyser.
const DefaultTimeout = 10 * time.Second

// MaxCodeSize is the largest code the review reads; larger code gets an
// analysis.unavailable finding instead.
const MaxCodeSize = 1 << 20

// Reviewer reviews code against a policy. The zero value is ready to use:
// the default policy, /usr/bin/python3, a 10 s bound and the /work and /tmp
// workspace. A Reviewer is safe for concurrent use if it is not changed.
type Reviewer struct {
	// Policy decides; nil means [DefaultPolicy].
	Policy *Policy
	// Python is the interpreter that parses Python; "" means [DefaultPython].
	Python string
	// Timeout bounds each run of the Python analyser; 0 means [DefaultTimeout].
	Timeout time.Duration
	// Workspace lists the directories code may touch, working directory
	// first; nil means /work (the working directory) and /tmp.
	Workspace []string
	// Offline says the code will run in a sandbox without network access:
	// decisions are then made by [Policy.DecideOffline], which denies,
	// rather than asks a person about, network code that could only fail.
	Offline bool
}

// Review analyses code with a zero [Reviewer] and decides with the default policy.
func Review(ctx context.Context, lang Language, code string) (Decision, error) {
	var r Reviewer
	return r.Review(ctx, lang, code)
}

// Review analyses code and decides what to do with it. The error is for
// bad input (an unknown language) and a done context; problems of the
// analysis itself are findings (analysis.unavailable, analysis.syntax-error).
func (r *Reviewer) Review(ctx context.Context, lang Language, code string) (Decision, error) {
	findings, err := r.Analyze(ctx, lang, code)
	if err != nil {
		return Decision{}, err
	}
	p := r.Policy
	if p == nil {
		p = DefaultPolicy()
	}
	if r.Offline {
		return p.DecideOffline(findings), nil
	}
	return p.Decide(findings), nil
}

// Analyze returns the findings for code, in source order.
func (r *Reviewer) Analyze(ctx context.Context, lang Language, code string) ([]Finding, error) {
	l, err := ParseLanguage(string(lang))
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	if l == Python {
		// Python reads \r\n and \r as line ends; keep lines aligned with it.
		code = strings.ReplaceAll(code, "\r\n", "\n")
		code = strings.ReplaceAll(code, "\r", "\n")
	}
	a := &analysis{r: r, src: newSource(code), ws: newWorkspace(r.Workspace)}
	if len(code) > MaxCodeSize {
		a.add(rawFinding{rule: RuleUnavailable, line: 1, msg: fmt.Sprintf("the code is too large to analyse (%d bytes; the limit is %d)", len(code), MaxCodeSize)})
		return a.findings, nil
	}
	top := placement{lineOffset: 0}
	switch l {
	case Python:
		err = a.python(ctx, code, top, 0)
	case Shell:
		err = a.shell(ctx, code, top, 0)
	}
	if err != nil {
		return nil, err
	}
	return sortFindings(a.findings), nil
}

// placement says how positions in analysed code map to the top-level source.
type placement struct {
	// lineOffset >= 0: the code is a verbatim piece of the top-level source
	// starting on line lineOffset+1 (0 for the top-level source itself).
	lineOffset int
	// Otherwise every finding is reported at line and col, and via says how
	// the code got there ("in the shell command passed to os.system").
	line, col int
	via       string
}

// at maps a position in the analysed code to the top-level source.
func (p placement) at(line, col int, msg string) rawFinding {
	if p.lineOffset >= 0 {
		return rawFinding{line: line + p.lineOffset, col: col, msg: msg}
	}
	return rawFinding{line: p.line, col: p.col, msg: msg + " (" + p.via + ")"}
}

// analysis is one review in progress.
type analysis struct {
	r        *Reviewer
	src      *source // the top-level source
	ws       workspace
	findings []Finding
}

func (a *analysis) add(f rawFinding) {
	x := a.src.finding(f.rule, f.line, f.col, f.msg)
	if f.snippet != "" {
		x.Snippet = f.snippet
	}
	a.findings = append(a.findings, x)
}

func (a *analysis) python(ctx context.Context, code string, place placement, depth int) error {
	python := a.r.Python
	if python == "" {
		python = DefaultPython
	}
	timeout := a.r.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	out, err := runPython(ctx, python, timeout, code)
	if errors.Is(err, errUnavailable) {
		f := place.at(1, 0, "could not analyse the Python code: "+strings.TrimPrefix(err.Error(), errUnavailable.Error()+": "))
		f.rule = RuleUnavailable
		a.add(f)
		return nil
	}
	if err != nil {
		return err
	}
	if se := out.SyntaxError; se != nil {
		f := place.at(se.Line, se.Col+1, fmt.Sprintf("the Python code does not parse (%s); Python compiles the whole code before running any of it, so none of it runs and the run will report the error", se.Message))
		f.rule = RuleSyntaxError
		a.add(f)
	}
	for _, pf := range out.Findings {
		if _, ok := rulesByID[pf.Rule]; !ok {
			return fmt.Errorf("policy: internal error: the python analyser reported unknown rule %q", pf.Rule)
		}
		f := place.at(pf.Line, pf.Col+1, pf.Message)
		f.rule = pf.Rule
		a.add(f)
	}
	for _, pp := range out.Paths {
		rule, msg := a.pythonPath(pp.Path, pp.Exact, pp.API, pp.Write)
		if rule == "" {
			continue
		}
		f := place.at(pp.Line, pp.Col+1, msg)
		f.rule = rule
		a.add(f)
	}
	for _, cell := range out.ShellCells {
		sub := placement{lineOffset: place.lineOffset + cell.LineOffset}
		if place.lineOffset < 0 {
			sub = place
		}
		if err := a.shell(ctx, cell.Code, sub, depth+1); err != nil {
			return err
		}
	}
	for _, sh := range out.Shell {
		f := place.at(sh.Line, sh.Col+1, "")
		sub := placement{lineOffset: -1, line: f.line, col: f.col, via: "in the shell command passed to " + sh.Via}
		if place.lineOffset < 0 {
			sub.via = place.via
		}
		if depth >= maxNest {
			continue
		}
		if err := a.shell(ctx, sh.Code, sub, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// pythonPath classifies a path the Python analyser saw.
func (a *analysis) pythonPath(p string, exact bool, api string, write bool) (rule, msg string) {
	unknown := -1
	if !exact {
		unknown = strings.Index(p, pyPlaceholder)
	}
	v := a.ws.classify(p, exact, unknown, "", pathCheck{fileAPI: api != ""})
	if v.rule == "" {
		return "", ""
	}
	shown := strings.ReplaceAll(p, pyPlaceholder, "…")
	switch {
	case api == "shutil.rmtree" && rootish(v.resolved):
		return RuleRmRoot, "shutil.rmtree removes " + shown + " recursively"
	case write && exact && diskDevice().MatchString(v.resolved):
		return RuleDiskWrite, "writes to the device " + shown + ", destroying what is on it"
	case write && exact && v.resolved == "/proc/sysrq-trigger":
		return RulePower, "writes to /proc/sysrq-trigger, which can reboot or crash the machine at once"
	}
	msg = strings.ReplaceAll(v.message, pyPlaceholder, "…")
	if api != "" && !strings.HasPrefix(api, ".") {
		msg = api + "(...) " + msg
	}
	return v.rule, msg
}

func (a *analysis) shell(ctx context.Context, code string, place placement, depth int) error {
	res := &shResults{}
	own := a.src
	if place.lineOffset != 0 {
		own = newSource(code)
	}
	c := newShChecker(own, a.ws, res)
	c.depth = depth
	if place.lineOffset < 0 {
		c.atLine, c.atCol, c.via = place.line, place.col, place.via
	}
	c.check(parseShell(code))
	for _, f := range res.findings {
		if place.lineOffset > 0 {
			f.line += place.lineOffset
		}
		a.add(f)
	}
	for _, e := range res.embeds {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("policy: %w", err)
		}
		sub := placement{lineOffset: -1, line: e.line, col: e.col, via: e.via}
		if e.lineOffset >= 0 {
			sub = placement{lineOffset: e.lineOffset}
		}
		if depth >= maxNest {
			continue
		}
		if err := a.python(ctx, e.code, sub, depth+1); err != nil {
			return err
		}
	}
	return nil
}
