package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
)

// The model is told the limits of each execution and the packages the
// sandbox was found to have, not a fixed list; in steps mode the tool says
// that the session persists.
func TestSystemPromptStatesTheSandbox(t *testing.T) {
	rc := runConfig{Mode: ModeSingle, Format: FormatTool, Packages: []string{"numpy", "scipy"},
		Limits: sandbox.Limits{WallTime: 10 * time.Second, CPUTime: 5 * time.Second, Memory: 256 << 20}}
	p := systemPrompt(rc)
	for _, want := range []string{"Python 3 (with numpy, scipy)", "at most 10s of wall time and 5s of CPU time", "at most 256 MiB of memory", "no network"} {
		if !strings.Contains(p, want) {
			t.Errorf("system prompt lacks %q:\n%s", want, p)
		}
	}
	if strings.Contains(p, "pandas") {
		t.Errorf("the prompt names a package the sandbox was not found to have:\n%s", p)
	}
	rc.Packages = nil
	if p := systemPrompt(rc); strings.Contains(p, "(with") {
		t.Errorf("no packages detected, yet some named:\n%s", p)
	}
	if d := runCodeTool(ModeSingle).Description; !strings.Contains(d, "fresh, isolated sandbox") {
		t.Errorf("single mode tool: %q", d)
	}
	if d := runCodeTool(ModeSteps).Description; !strings.Contains(d, "persistent session") || strings.Contains(d, "fresh") {
		t.Errorf("steps mode tool: %q", d)
	}
}
