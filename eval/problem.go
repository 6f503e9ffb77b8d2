package eval

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/coderun/coderun/language"
	"github.com/coderun/coderun/sandbox"
)

// Format is the shape of a problem line.
type Format string

const (
	// Auto detects the format of each line from its fields.
	Auto Format = ""
	// HumanEval: {task_id, prompt, canonical_solution, test, entry_point}.
	// prompt + solution runs in the solution's process; test + "\n" +
	// "check(entry_point)" in the tests', as in github.com/openai/human-eval
	// but for the process boundary between them.
	HumanEval Format = "humaneval"
	// MBPP: {task_id, text, code, test_list, test_setup_code, challenge_test_list}.
	// The solution, then test_setup_code, run in the solution's process; the
	// assertions of test_list (and of challenge_test_list if asked), one per
	// line, in the tests'. The setup goes with the solution because it uses
	// the solution's definitions (tasks 367 and 927 build trees of the
	// solution's Node class).
	MBPP Format = "mbpp"
	// Generic: {id, code, test} (task_id may stand for id; an optional
	// language, default python). The program is code + "\n" + test.
	Generic Format = "generic"
)

// Formats lists the formats a caller may force.
var Formats = []Format{HumanEval, MBPP, Generic, HumanEvalX}

// ParseFormat reads a format name; "" and "auto" mean Auto.
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(s)); f {
	case "", "auto":
		return Auto, nil
	case HumanEval, MBPP, Generic, HumanEvalX:
		return f, nil
	}
	return Auto, fmt.Errorf("unknown format %q (known: auto, humaneval, mbpp, generic, humaneval-x)", s)
}

// Problem is one benchmark problem: what a solution is tested with.
type Problem struct {
	TaskID string
	Format Format
	// Language runs the program; Python unless a generic line says otherwise.
	Language sandbox.Language
	// Solution is the reference solution (HumanEval canonical_solution, MBPP
	// and generic code); HasSolution says whether the line had one.
	Solution    string
	HasSolution bool

	Prompt     string // HumanEval: the prompt a completion continues
	Test       string // HumanEval, generic: the test code
	EntryPoint string // HumanEval: the function check() is called with

	Setup string   // MBPP: test_setup_code
	Tests []string // MBPP: test_list, plus challenge_test_list if asked

	humanEvalX *humanEvalX // HumanEval-X: see humanevalx.go

	// Source and Line say where the problem came from.
	Source string
	Line   int
}

// Item is the item that tests solution against the problem, with the
// task id for its ID (a sample's caller renames it). For HumanEval the
// solution is a completion of the prompt; for MBPP and generic problems it
// is the whole code.
//
// HumanEval, MBPP and generic Python, bash and node items run in a
// harness that keeps the solution in processes of its own (see the package
// documentation): Code is the harness with the solution, Tests the tests
// it reads from its standard input. Generic items in other languages are
// one program, solution then tests, in one process.
func (p *Problem) Item(solution string) Item {
	if p.Format == HumanEvalX {
		return p.humanEvalXItem(solution)
	}
	it := Item{ID: p.TaskID, TaskID: p.TaskID, Language: p.Language}
	switch p.Format {
	case HumanEval:
		it.Code = harnessProgram(solution, p.Prompt, p.EntryPoint, "")
		it.Tests = harnessTests(p.Test+"\n"+"check("+p.EntryPoint+")\n", "")
	case MBPP:
		it.Code = harnessProgram(solution, "", "", p.Setup)
		reference := ""
		if p.HasSolution {
			reference = p.Solution
		}
		it.Tests = harnessTests(strings.Join(p.Tests, "\n")+"\n", reference)
	default:
		switch p.Language {
		case "", sandbox.Python:
			it.Code, it.Tests = genericProgram(solution), harnessTests(p.Test+"\n", "")
		case sandbox.Bash:
			it.Code, it.Tests = bashHarnessProgram(solution), p.Test+"\n"
		case sandbox.Node:
			it.Code, it.Tests = nodeHarnessProgram(solution), p.Test+"\n"
		default:
			it.Code = solution + "\n" + p.Test
		}
	}
	return it
}

// Reference is the item that runs the problem's reference solution.
func (p *Problem) Reference() Item { return p.Item(p.Solution) }

// ReadOptions control how problem lines are read.
type ReadOptions struct {
	// Format forces one shape for every line; Auto detects it per line.
	Format Format
	// MBPPChallenge adds MBPP's challenge_test_list to the tests.
	MBPPChallenge bool
	// Name is the input's name in error messages.
	Name string
}

// ReadProblems reads problem lines from r (plain JSON Lines; see Open for
// files that may be compressed). A line that cannot be used (malformed JSON,
// a missing or mistyped field, an unknown shape, a task id seen before) is
// reported to bad with its line number and skipped, unless bad returns an
// error, which stops reading and is returned.
func ReadProblems(r io.Reader, opts ReadOptions, bad BadLineFunc) ([]*Problem, error) {
	var out []*Problem
	seen := map[string]int{}
	err := lines(r, opts.Name, bad, func(line []byte, n int) error {
		p, err := parseProblem(line, opts)
		if err == nil {
			if first, dup := seen[p.TaskID]; dup {
				err = fmt.Errorf("task %s given again (first on line %d)", p.TaskID, first)
			}
		}
		if err != nil {
			return bad(&LineError{File: opts.Name, Line: n, Err: err})
		}
		p.Source, p.Line = opts.Name, n
		seen[p.TaskID] = n
		out = append(out, p)
		return nil
	})
	return out, err
}

// References turns problems into items that run their reference solutions.
// A problem without one is reported to bad (with its line) and skipped.
func References(problems []*Problem, bad BadLineFunc) ([]Item, error) {
	items := make([]Item, 0, len(problems))
	for _, p := range problems {
		if !p.HasSolution {
			field := "code"
			if p.Format == HumanEval {
				field = "canonical_solution"
			}
			if err := bad(&LineError{File: p.Source, Line: p.Line, Err: fmt.Errorf("task %s has no %s to run (give completions with a samples file)", p.TaskID, field)}); err != nil {
				return items, err
			}
			continue
		}
		items = append(items, p.Reference())
	}
	return items, nil
}

type fields map[string]json.RawMessage

func parseProblem(line []byte, opts ReadOptions) (*Problem, error) {
	f, err := decodeObject(line)
	if err != nil {
		return nil, err
	}
	format := opts.Format
	if format == Auto {
		if format = detect(f); format == Auto {
			return nil, fmt.Errorf("unknown shape (fields %s): want HumanEval {task_id, prompt, canonical_solution, test, entry_point}, MBPP {task_id, code, test_list, ...} or {id, code, test}", f.names())
		}
	}
	p := &Problem{Format: format, Language: sandbox.Python}
	switch format {
	case HumanEval:
		if p.TaskID, err = f.id("task_id"); err != nil {
			return nil, err
		}
		for _, s := range []struct {
			name string
			dst  *string
		}{{"prompt", &p.Prompt}, {"test", &p.Test}, {"entry_point", &p.EntryPoint}} {
			if err := f.str(s.name, s.dst, true); err != nil {
				return nil, err
			}
		}
		if p.EntryPoint == "" {
			return nil, errors.New(`field "entry_point" is empty`)
		}
		p.HasSolution = f.has("canonical_solution")
		if err := f.str("canonical_solution", &p.Solution, false); err != nil {
			return nil, err
		}
	case HumanEvalX:
		if err := parseHumanEvalX(f, p); err != nil {
			return nil, err
		}
	case MBPP:
		if p.TaskID, err = f.id("task_id"); err != nil {
			return nil, err
		}
		if p.Tests, err = f.strs("test_list", true); err != nil {
			return nil, err
		}
		if len(p.Tests) == 0 {
			return nil, errors.New(`field "test_list" is empty`)
		}
		if opts.MBPPChallenge {
			more, err := f.strs("challenge_test_list", false)
			if err != nil {
				return nil, err
			}
			p.Tests = append(p.Tests, more...)
		}
		if err := f.str("test_setup_code", &p.Setup, false); err != nil {
			return nil, err
		}
		p.HasSolution = f.has("code")
		if err := f.str("code", &p.Solution, false); err != nil {
			return nil, err
		}
	case Generic:
		key := "id"
		if !f.has("id") && f.has("task_id") {
			key = "task_id"
		}
		if p.TaskID, err = f.id(key); err != nil {
			return nil, err
		}
		if err := f.str("test", &p.Test, true); err != nil {
			return nil, err
		}
		p.HasSolution = f.has("code")
		if err := f.str("code", &p.Solution, false); err != nil {
			return nil, err
		}
		var lang string
		if err := f.str("language", &lang, false); err != nil {
			return nil, err
		}
		if lang != "" {
			l, ok := language.Parse(lang)
			if !ok {
				return nil, fmt.Errorf("unknown language %q (known: %s)", lang, strings.Join(language.Names(), ", "))
			}
			p.Language = l
		}
	default:
		return nil, fmt.Errorf("unknown format %q", format)
	}
	return p, nil
}

// detect names the shape whose distinctive fields a line has.
func detect(f fields) Format {
	switch {
	case f.has("entry_point") && f.has("prompt") && f.has("test"):
		return HumanEval
	case f.has("test_list"):
		return MBPP
	case isHumanEvalX(f):
		return HumanEvalX
	case f.has("test") && (f.has("id") || f.has("task_id")):
		return Generic
	}
	return Auto
}

func decodeObject(line []byte) (fields, error) {
	var f fields
	dec := json.NewDecoder(bytes.NewReader(line))
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("malformed JSON: %w", err)
	}
	if f == nil {
		return nil, errors.New("malformed JSON: want an object, got null")
	}
	if dec.More() {
		return nil, errors.New("malformed JSON: more than one value on the line")
	}
	return f, nil
}

func (f fields) has(name string) bool {
	v, ok := f[name]
	return ok && !bytes.Equal(v, []byte("null"))
}

func (f fields) names() string {
	var n []string
	for k := range f {
		n = append(n, k)
	}
	sort.Strings(n)
	return strings.Join(n, ", ")
}

// str decodes a string field; a missing (or null) field is an error only
// when required.
func (f fields) str(name string, dst *string, required bool) error {
	if !f.has(name) {
		if required {
			return fmt.Errorf("missing field %q", name)
		}
		return nil
	}
	if err := json.Unmarshal(f[name], dst); err != nil {
		return fmt.Errorf("field %q: want a string", name)
	}
	return nil
}

func (f fields) strs(name string, required bool) ([]string, error) {
	if !f.has(name) {
		if required {
			return nil, fmt.Errorf("missing field %q", name)
		}
		return nil, nil
	}
	var out []string
	if err := json.Unmarshal(f[name], &out); err != nil {
		return nil, fmt.Errorf("field %q: want a list of strings", name)
	}
	return out, nil
}

// id decodes a task id, a string or an integer (MBPP numbers its tasks);
// either way it becomes a string, so "7" and 7 name the same task.
func (f fields) id(name string) (string, error) {
	raw, ok := f[name]
	if !ok || bytes.Equal(raw, []byte("null")) {
		return "", fmt.Errorf("missing field %q", name)
	}
	return parseID(raw, name)
}

func parseID(raw json.RawMessage, name string) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if s == "" {
			return "", fmt.Errorf("field %q is empty", name)
		}
		return s, nil
	}
	var n json.Number
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&n); err == nil {
		if _, err := n.Int64(); err == nil {
			return n.String(), nil
		}
	}
	return "", fmt.Errorf("field %q: want a string or an integer", name)
}
