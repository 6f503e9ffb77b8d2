package llm_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/coderun/coderun/language"
	"github.com/coderun/coderun/llm"
)

// isFenceLine reports whether a line of text, indentation removed, starts
// with a fence (three backticks or tildes).
func isFenceLine(line string) bool {
	t := strings.TrimLeft(line, " \t")
	return strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")
}

// FuzzExtractCode checks code-block extraction from a model's reply
// against what the documentation promises: every block's code is a run of
// consecutive lines of the reply (indentation removed) between its fences,
// blocks come in order, only the last may be incomplete, CRLF line ends read
// as LF, languages are normalised; and SelectCode picks the last run of one
// language among the candidates its rule names.
func FuzzExtractCode(f *testing.F) {
	for _, s := range []string{
		"Run this:\n```python\nprint(1)\n```\nDone.",
		"```py\nx = 1\n```",
		"```Python3\nx = 1\n```",
		"```\nprint(2)\n```",
		"````python\ns = '''\n```\n'''\nprint(s)\n````",
		"```python\r\nprint(6)\r\n```\r\n",
		"1. Run:\n   ```python\n   for i in range(2):\n       print(i)\n   ```",
		"Use ```print(1)``` inline.\n```python\nprint(7)\n```",
		"```{.python}\nprint(4)\n```",
		"~~~python\nprint(5)\n~~~",
		"```python title=\"a.py\"\nprint(3)\n```",
		"```python\nx = 2\n```\nOutput:\n```text\n2\n```\n```python\nprint(x)\n```",
		"```python\na = 1\n```\n```bash\nls\n```\n```python\nb = 2\n```",
		"```python\nprint('hi')\n```\nprints:\n```\nhi\n```",
		"```python\nprint(1)\n```\n```python\nprint(2",
		"```python\nwhile True:\n",
		"\t```sh\n\techo a\n\t```\n",
		"```js\nconsole.log(1)\n~~~\n```",
	} {
		f.Add(s, "python")
		f.Add(s, "sh")
	}
	f.Add("```\nx\n```", "")
	f.Add("```\nx\n```", "Ruby")
	f.Fuzz(func(t *testing.T, text, def string) {
		blocks := llm.ExtractCode(text, language.Language(def))
		lines := strings.Split(text, "\n")
		for i := range lines {
			lines[i] = strings.TrimSuffix(lines[i], "\r")
		}
		next := 0 // the first line the next block may use
		for bi, b := range blocks {
			if !b.Complete && bi != len(blocks)-1 {
				t.Fatalf("block %d of %d is incomplete", bi+1, len(blocks))
			}
			var code []string
			if b.Code != "" {
				if !strings.HasSuffix(b.Code, "\n") {
					t.Fatalf("block %d: code %q does not end with a newline", bi+1, b.Code)
				}
				code = strings.Split(strings.TrimSuffix(b.Code, "\n"), "\n")
			}
			// The opening fence is line j-1; the code is lines j...
			found := false
			for j := next + 1; j+len(code) <= len(lines) && !found; j++ {
				if !isFenceLine(lines[j-1]) || !strings.Contains(lines[j-1], b.Tag) {
					continue
				}
				ok := true
				for k, c := range code {
					if !strings.HasSuffix(lines[j+k], c) {
						ok = false
						break
					}
				}
				end := j + len(code) // the closing fence, or the end of the text
				if ok && b.Complete && (end >= len(lines) || !isFenceLine(lines[end])) {
					ok = false
				}
				if ok && !b.Complete && end != len(lines) {
					ok = false
				}
				if ok {
					found, next = true, end+1
				}
			}
			if !found {
				t.Fatalf("block %d (%+v) is not a run of lines of the text after the previous block", bi+1, b)
			}
			if lang, ok := llm.NormalizeLanguage(b.Tag); ok && b.Language != lang {
				t.Fatalf("block %d: tag %q, language %q", bi+1, b.Tag, b.Language)
			}
			if b.Tag == "" {
				want := language.Language(def)
				if lang, ok := llm.NormalizeLanguage(def); ok {
					want = lang
				}
				if b.Language != want {
					t.Fatalf("untagged block %d: language %q, default %q", bi+1, b.Language, def)
				}
			}
			if b.Runnable() != slices.Contains(llm.Languages(), b.Language) {
				t.Fatalf("block %d: language %q, Runnable %v", bi+1, b.Language, b.Runnable())
			}
		}
		if !strings.Contains(text, "\r") {
			if crlf := llm.ExtractCode(strings.ReplaceAll(text, "\n", "\r\n"), language.Language(def)); !reflect.DeepEqual(crlf, blocks) {
				t.Fatalf("with CRLF line ends:\n%+v\nwith LF:\n%+v", crlf, blocks)
			}
		}
		checkSelectCode(t, blocks)
	})
}

// checkSelectCode checks SelectCode against its documented rule.
func checkSelectCode(t *testing.T, blocks []llm.CodeBlock) {
	t.Helper()
	var cands []llm.CodeBlock
	for _, b := range blocks {
		if b.Complete && b.Runnable() && strings.TrimSpace(b.Code) != "" {
			cands = append(cands, b)
		}
	}
	if slices.ContainsFunc(cands, func(b llm.CodeBlock) bool { return b.Tag != "" }) {
		cands = slices.DeleteFunc(cands, func(b llm.CodeBlock) bool { return b.Tag == "" })
	}
	got, ok := llm.SelectCode(blocks)
	if ok != (len(cands) > 0) {
		t.Fatalf("SelectCode ok %v with %d candidates", ok, len(cands))
	}
	if !ok {
		return
	}
	start := len(cands) - 1
	for start > 0 && cands[start-1].Language == cands[len(cands)-1].Language {
		start--
	}
	var parts []string
	for _, b := range cands[start:] {
		parts = append(parts, strings.TrimRight(b.Code, "\n"))
	}
	want := llm.CodeBlock{Language: cands[start].Language, Tag: cands[len(cands)-1].Tag, Code: strings.Join(parts, "\n\n") + "\n", Complete: true}
	if got != want {
		t.Fatalf("SelectCode = %+v, want %+v", got, want)
	}
}
