package agent

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// The answer must rest on computed values. ground checks the one thing that
// can be checked mechanically, by one rule:
//
//   - A number the answer quotes is grounded by the OUTPUT of the code
//     (its stdout and results, the names of the files it wrote): exactly,
//     rounded to the precision the answer writes it with (137.456 quoted as
//     137.46 or 137.5; 1,234,567 as "1.2 million" or "1.23M"), or as a
//     percentage of a fraction the output shows (0.25 as 25%).
//   - A number the output does not show but the task (or the description
//     of an input file) does is accepted only as a restatement of the
//     task: when the same sentence also quotes a number the output shows —
//     the result the restated values lead to ("The mean of 120, 80, 200
//     and 150 is 137.5."). A sentence whose only numbers come from the task
//     ("The mean is 150.") states no computed result: its numbers are
//     unsupported.
//   - Numbers that only the code shows (range(1000), a constant) never
//     ground an answer: the code is what was meant to happen, the output
//     what did.
//
// Every number is checked, small integers too. A range ("120-200") is two
// numbers, both positive; scaled forms ("1.2 million", "3.4k", "2bn") are
// read at their scale.

var numberRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?(?:%|\s?(?:thousand|million|billion|trillion)\b|(?:k|K|M|B|bn|BN)\b)?`)
})

var scaleRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\s?(?:thousand|million|billion|trillion|k|K|M|B|bn|BN)$`)
})

type number struct {
	text    string
	value   float64
	step    float64 // the precision it is written with: 0.1 for "1.5", 100000 for "1.2 million"
	percent bool
	pos     int // where the answer writes it
}

var scales = map[string]float64{
	"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12,
	"k": 1e3, "K": 1e3, "M": 1e6, "B": 1e9, "bn": 1e9, "BN": 1e9,
}

func numbers(s string) []number {
	var out []number
	for _, loc := range numberRE().FindAllStringIndex(s, -1) {
		text := s[loc[0]:loc[1]]
		start := loc[0]
		// A sign after a digit or a letter is a hyphen: "120-200" is a
		// range of two numbers, "2024-01-15" a date, "x-1" a name.
		if (text[0] == '-' || text[0] == '+') && start > 0 && (isDigit(s[start-1]) || isWordByte(s[start-1])) {
			text, start = text[1:], start+1
		}
		// Skip digits glued to letters (ids such as "a1b2", "x86").
		if start > 0 && isWordByte(s[start-1]) {
			continue
		}
		if loc[1] < len(s) && isLetter(s[loc[1]]) {
			continue
		}
		n := number{text: strings.TrimLeft(text, "+"), pos: start}
		t := strings.ReplaceAll(n.text, ",", "")
		scale := 1.0
		if strings.HasSuffix(t, "%") {
			n.percent, t = true, strings.TrimSuffix(t, "%")
		} else if m := scaleRE().FindStringIndex(t); m != nil {
			scale = scales[strings.TrimSpace(t[m[0]:])]
			t = t[:m[0]]
		}
		v, err := strconv.ParseFloat(t, 64)
		if err != nil || scale == 0 {
			continue
		}
		n.value, n.step = v*scale, scale
		if i := strings.IndexByte(t, '.'); i >= 0 && !strings.ContainsAny(t, "eE") {
			n.step = scale * math.Pow(10, -float64(len(t)-i-1))
		}
		out = append(out, n)
	}
	return out
}

func isDigit(c byte) bool    { return c >= '0' && c <= '9' }
func isWordByte(c byte) bool { return isLetter(c) || c == '_' }
func isLetter(c byte) bool   { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// grounding is the result of the check.
type grounding struct {
	Quoted      []string // numbers the output shows (or restated from the task)
	Unsupported []string // numbers it does not
}

// ground checks answer against output (what the code printed) and given
// (the task and the input descriptions), by the rule above.
func ground(answer string, output, given []string) grounding {
	var out, giv []number
	for _, e := range output {
		out = append(out, numbers(e)...)
	}
	for _, e := range given {
		giv = append(giv, numbers(e)...)
	}
	// Every occurrence is checked: a number restated beside a result in
	// one sentence is still unsupported where another sentence states it
	// alone.
	var order []string
	ok := map[string]bool{}
	for _, sentence := range sentences(answer) {
		ns := numbers(sentence)
		result := false // the sentence quotes a number the output shows
		for _, n := range ns {
			if supported(n, out) {
				result = true
			}
		}
		for _, n := range ns {
			good := supported(n, out) || result && supported(n, giv)
			if prev, seen := ok[n.text]; !seen {
				order = append(order, n.text)
				ok[n.text] = good
			} else {
				ok[n.text] = prev && good
			}
		}
	}
	var g grounding
	for _, text := range order {
		if ok[text] {
			g.Quoted = append(g.Quoted, text)
		} else {
			g.Unsupported = append(g.Unsupported, text)
		}
	}
	return g
}

// sentences splits s after each '.', '!', '?' or ';' that ends a sentence
// (followed by a space or the end: not the point of "137.5") and at
// newlines.
func sentences(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		end := c == '\n'
		if c == '.' || c == '!' || c == '?' || c == ';' {
			end = i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\n' || s[i+1] == '\t'
		}
		if end {
			out = append(out, s[start:i+1])
			start = i + 1
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

func supported(n number, ev []number) bool {
	for _, e := range ev {
		if matches(n, e.value) {
			return true
		}
		// 0.25 in the output quoted as 25% (or 25.0%).
		if n.percent && !e.percent && matches(n, e.value*100) {
			return true
		}
	}
	return false
}

// matches reports whether n is e exactly or e rounded to the precision n
// is written with.
func matches(n number, e float64) bool {
	v := n.value
	if v == e {
		return true
	}
	r := math.Round(e/n.step) * n.step
	return math.Abs(r-v) <= 1e-9*math.Max(1, math.Abs(v))
}
