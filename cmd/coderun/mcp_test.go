package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/llm/llmtest"
	"github.com/coderun/coderun/mcp/mcptest"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
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

// TestMCPStdioAskRecordsLikeTheCLI: ask over `coderun mcp` uses the
// configured model and writes the default tenant's records, the ones
// `coderun runs list` shows.
func TestMCPStdioAskRecordsLikeTheCLI(t *testing.T) {
	e := newAskEnv(t, llmtest.OpenAI,
		llmtest.RunCode("c1", "python", "print('mean:', sum([120, 80, 200, 150]) / 4)\n"),
		llmtest.Reply("The mean is 137.5."))
	cmd := e.command("mcp")
	cmd.Env = append(cmd.Env, "CODERUN_MODEL="+e.model)
	c := sdk.NewClient(&sdk.Implementation{Name: "go-test-client", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := c.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "ask", Arguments: map[string]any{"task": "What is the mean of 120, 80, 200, 150?"}})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := r.StructuredContent.(map[string]any)
	if r.IsError || out["status"] != "succeeded" || out["answer"] != "The mean is 137.5." {
		t.Fatalf("ask: %v %v", r.Content, out)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	list := e.run("runs", "list")
	if list.code != 0 || !strings.Contains(list.stdout, out["run"].(string)[:8]) {
		t.Errorf("runs list does not show the run %v:\n%s%s", out["run"], list.stdout, list.stderr)
	}
}
