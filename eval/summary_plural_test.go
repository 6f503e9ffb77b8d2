package eval

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// One task, one item: the summary says so in the singular.
func TestSummarySingular(t *testing.T) {
	var tl Tally
	tl.Add(Verdict{ID: "a", TaskID: "a", Status: Passed, TotalMS: 5, WallMS: 4}, true)
	var b bytes.Buffer
	if err := tl.Summary(nil, time.Second).WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"items     1 (1 task)", "(1 item in "} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text summary lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "1 tasks") || strings.Contains(b.String(), "1 items") {
		t.Errorf("a plural for one:\n%s", b.String())
	}
}
