package agent

import (
	"math"
	"regexp"
	"strconv"
	"strings"
)

// The answer must rest on computed values. ground checks the one thing that
// can be checked mechanically: every number the answer quotes appears in
// the evidence — the outputs of the code, the code itself (its constants),
// the task and the descriptions of the input files — exactly, or rounded
// to the precision the answer writes it with (137.456 quoted as 137.46 or
// 137.5), or as a percentage of a fraction the output shows. Small
// integers (0 to 10) are not checked: they count things ("3 columns") more
// often than they report results.

var numberRE = regexp.MustCompile(`[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?%?`)

type number struct {
	text     string
	value    float64
	decimals int
	percent  bool
}

func numbers(s string) []number {
	var out []number
	for _, loc := range numberRE.FindAllStringIndex(s, -1) {
		// Skip digits glued to letters (ids such as "a1b2", "x86").
		if loc[0] > 0 && isWordByte(s[loc[0]-1]) {
			continue
		}
		if loc[1] < len(s) && isLetter(s[loc[1]]) {
			continue
		}
		text := s[loc[0]:loc[1]]
		n := number{text: strings.TrimLeft(text, "+")}
		t := strings.TrimSuffix(strings.ReplaceAll(n.text, ",", ""), "%")
		n.percent = strings.HasSuffix(text, "%")
		v, err := strconv.ParseFloat(t, 64)
		if err != nil {
			continue
		}
		n.value = v
		if i := strings.IndexByte(t, '.'); i >= 0 && !strings.ContainsAny(t, "eE") {
			n.decimals = len(t) - i - 1
		}
		out = append(out, n)
	}
	return out
}

func isWordByte(c byte) bool { return isLetter(c) || c == '_' }
func isLetter(c byte) bool   { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// grounding is the result of the check.
type grounding struct {
	Quoted      []string // numbers found in the evidence
	Unsupported []string // numbers not found
}

func ground(answer string, evidence ...string) grounding {
	var ev []number
	for _, e := range evidence {
		ev = append(ev, numbers(e)...)
	}
	var g grounding
	seen := map[string]bool{}
	for _, n := range numbers(answer) {
		if seen[n.text] {
			continue
		}
		seen[n.text] = true
		if !n.percent && n.decimals == 0 && math.Abs(n.value) <= 10 {
			continue
		}
		if supported(n, ev) {
			g.Quoted = append(g.Quoted, n.text)
		} else {
			g.Unsupported = append(g.Unsupported, n.text)
		}
	}
	return g
}

func supported(n number, ev []number) bool {
	for _, e := range ev {
		if matches(n.value, n.decimals, e.value) {
			return true
		}
		// 0.25 in the output quoted as 25% (or 25.0%).
		if n.percent && !e.percent && matches(n.value, n.decimals, e.value*100) {
			return true
		}
	}
	return false
}

// matches reports whether v, written with decimals digits after the point,
// is e exactly or e rounded to that precision.
func matches(v float64, decimals int, e float64) bool {
	if v == e {
		return true
	}
	scale := math.Pow(10, float64(decimals))
	r := math.Round(e*scale) / scale
	return math.Abs(r-v) <= 1e-9*math.Max(1, math.Abs(v))
}
