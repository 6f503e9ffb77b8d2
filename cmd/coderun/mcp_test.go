package main

import (
	"os"
	"testing"

	"github.com/coderun/coderun/mcp/mcptest"
)

// TestMCPStdioWithTheTypeScriptClient has the official MCP TypeScript
// SDK's client start `coderun mcp` and call its tools over stdio.
func TestMCPStdioWithTheTypeScriptClient(t *testing.T) {
	needSandbox(t)
	mcptest.NeedClient(t)
	t.Parallel()
	env := append(os.Environ(), "CODERUN_DATA_DIR="+t.TempDir())
	r := mcptest.RunScenario(t, env, "stdio", binary, "mcp")
	mcptest.CheckScenario(t, r)
}
