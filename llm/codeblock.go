package llm

import (
	"strings"

	"github.com/coderun/coderun/language"
)

// The languages coderun runs, named as the sandbox names them, so that a
// normalised language can be handed to it as is.
const (
	Python = language.Python
	Bash   = language.Bash
	Node   = language.Node // JavaScript, run by Node.js
)

// Languages returns the languages an agent's code runs in (language.Native:
// Python, Bash, Node).
func Languages() []language.Language { return language.Native() }

// NormalizeLanguage maps a language name or fence tag ("py", "Python3",
// "sh", "node") to one of [Languages], and reports whether it is one.
func NormalizeLanguage(tag string) (language.Language, bool) {
	l, ok := language.Parse(tag)
	return l, ok && l.IsNative()
}

// CodeBlock is one fenced code block of a model's text.
type CodeBlock struct {
	// Language is the normalised language ([NormalizeLanguage]); for an
	// untagged block, the default language given; for a tag coderun does not
	// run ("json", "text"), the tag in lower case.
	Language language.Language
	// Tag is the fence's language tag as written, "" for an untagged block.
	Tag string
	// Code is the block's content, without the fences.
	Code string
	// Complete is false for a block whose closing fence never came (a reply
	// cut at the token limit).
	Complete bool
}

// Runnable reports whether coderun runs the block's language.
func (b CodeBlock) Runnable() bool {
	return b.Language.IsNative()
}

// ExtractCode returns every fenced code block of text, in order. Fences are
// runs of three or more backticks or tildes, possibly indented (as inside a
// list item, whose indentation is removed from the code); a block ends at a
// fence of the same character at least as long, or at the end of the text.
// An untagged block gets defaultLang (normalised if it is an alias).
func ExtractCode(text string, defaultLang language.Language) []CodeBlock {
	if lang, ok := NormalizeLanguage(string(defaultLang)); ok {
		defaultLang = lang
	}
	var (
		blocks []CodeBlock
		cur    *CodeBlock
		code   []string
		fence  string // the opening fence, e.g. "```"
		indent int
	)
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSuffix(line, "\r")
		trimmed := strings.TrimLeft(line, " \t")
		if cur == nil {
			f, info, ok := openingFence(trimmed)
			if !ok {
				continue
			}
			tag := language.FenceTag(info)
			lang := language.Language(strings.ToLower(tag))
			if norm, ok := NormalizeLanguage(tag); ok {
				lang = norm
			} else if tag == "" {
				lang = defaultLang
			}
			cur = &CodeBlock{Language: lang, Tag: tag}
			fence, indent, code = f, len(line)-len(trimmed), code[:0]
			continue
		}
		if isClosingFence(trimmed, fence) {
			cur.Code, cur.Complete = joinCode(code), true
			blocks = append(blocks, *cur)
			cur = nil
			continue
		}
		code = append(code, dedent(line, indent))
	}
	if cur != nil {
		cur.Code = joinCode(code)
		blocks = append(blocks, *cur)
	}
	return blocks
}

// SelectCode chooses the code to run from the blocks of one reply, by this
// rule:
//
//  1. Only complete, non-blank blocks in a language coderun runs are
//     candidates. If any candidate carries a language tag, untagged blocks
//     are not candidates: a model that tags its code leaves output and
//     examples untagged.
//  2. The code is the last run of consecutive candidates of one language,
//     joined by blank lines. Blocks that are not candidates (output, JSON)
//     do not break a run; a candidate of another language does.
//
// So a program explained in several python blocks runs whole, a "pip
// install" block before the python program is left out, and of two programs
// in different languages the last one runs. The price: a reply that repeats
// a whole program with a fix in a second block of the same language runs
// both versions one after the other — taking only the last block instead
// would break every program split across blocks, which is the commoner
// shape. ok is false when there is no candidate.
func SelectCode(blocks []CodeBlock) (CodeBlock, bool) {
	candidate := func(b CodeBlock) bool {
		return b.Complete && b.Runnable() && strings.TrimSpace(b.Code) != ""
	}
	tagged := false
	for _, b := range blocks {
		if candidate(b) && b.Tag != "" {
			tagged = true
			break
		}
	}
	var run []CodeBlock
	for _, b := range blocks {
		if !candidate(b) || (tagged && b.Tag == "") {
			continue
		}
		if len(run) > 0 && run[0].Language != b.Language {
			run = run[:0]
		}
		run = append(run, b)
	}
	if len(run) == 0 {
		return CodeBlock{}, false
	}
	parts := make([]string, len(run))
	for i, b := range run {
		parts[i] = strings.TrimRight(b.Code, "\n")
	}
	return CodeBlock{
		Language: run[0].Language,
		Tag:      run[len(run)-1].Tag,
		Code:     strings.Join(parts, "\n\n") + "\n",
		Complete: true,
	}, true
}

// openingFence recognises "```python", "~~~ py", "````" and returns the
// fence and the info string after it.
func openingFence(s string) (fence, info string, ok bool) {
	if len(s) < 3 || (s[0] != '`' && s[0] != '~') {
		return "", "", false
	}
	n := 0
	for n < len(s) && s[n] == s[0] {
		n++
	}
	if n < 3 {
		return "", "", false
	}
	info = strings.TrimSpace(s[n:])
	if s[0] == '`' && strings.Contains(info, "`") {
		return "", "", false // inline code such as ```x```, not a fence
	}
	return s[:n], info, true
}

func isClosingFence(s, fence string) bool {
	if !strings.HasPrefix(s, fence) {
		return false
	}
	return strings.TrimLeft(strings.TrimRight(s, " \t"), fence[:1]) == ""
}

// dedent removes up to n leading spaces (or tabs) from line.
func dedent(line string, n int) string {
	i := 0
	for i < n && i < len(line) && (line[i] == ' ' || line[i] == '\t') {
		i++
	}
	return line[i:]
}

func joinCode(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}
