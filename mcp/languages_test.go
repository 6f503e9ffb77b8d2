package mcp

import (
	"strings"
	"testing"

	"github.com/coderun/coderun/language"
	"github.com/coderun/coderun/sandbox"
)

// TestToolsNameTheLanguagesTheCodeRuns: the language a tool takes is
// described from the code (every language with a session driver for the
// session tools, every runtime language for run_code), never a list that
// falls behind it.
func TestToolsNameTheLanguagesTheCodeRuns(t *testing.T) {
	if got := orList([]string{"bash", "node", "python"}, "python"); got != "python (default), bash or node" {
		t.Errorf("orList = %q", got)
	}
	for _, c := range []struct {
		desc  string
		langs []language.Language
	}{
		{inputSchema[SessionRunInput](sessionLanguages()).Properties["language"].Description, language.Native()},
		{inputSchema[SessionCreateInput](sessionLanguages()).Properties["language"].Description, language.Native()},
		{inputSchema[RunCodeInput](runLanguages()).Properties["language"].Description, sandbox.Languages()},
	} {
		if strings.Contains(c.desc, "{languages}") || !strings.Contains(c.desc, "python (default)") {
			t.Errorf("description %q", c.desc)
		}
		for _, l := range c.langs {
			if !strings.Contains(c.desc, string(l)) {
				t.Errorf("description %q leaves out %s", c.desc, l)
			}
		}
	}
	if !strings.Contains(sessionLanguages(), "node") {
		t.Errorf("sessions: %q; node sessions exist", sessionLanguages())
	}
}
