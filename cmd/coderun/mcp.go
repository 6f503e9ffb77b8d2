package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/coderun/coderun/app"
	"github.com/coderun/coderun/mcp"
	"github.com/coderun/coderun/server"
	"github.com/coderun/coderun/store"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
)

func newMCPCmd(g *globalFlags) *cobra.Command {
	d := &dataFlags{g: g}
	var model, policyFile string
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve coderun's tools to an MCP client over standard input and output",
		Long: `Serve coderun as a Model Context Protocol server over standard input and
output, for desktop and IDE agents: the client starts this command and calls
its tools (run_code, session_run and the other session tools, files_upload,
files_list, files_read, ask, run_get, run_decide).

Runs and sessions belong to the default tenant: ask's runs are the records
the CLI writes (coderun runs list shows them). ask needs a model
(--model or $CODERUN_MODEL, with its API key in the environment).

Nothing but the protocol is written on standard output; troubles are logged
on standard error. The server stops when the client closes its input.`,
		Example: `  coderun mcp
  coderun mcp --model openai:gpt-4.1-mini --data-dir ~/coderun-data`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := g.load(g.runtimeFlags(), d.flags(), []binding{{"model", "model.spec", &model}, {"policy", "agent.policy", &policyFile}})
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runMCP(ctx, cfg, &sdk.StdioTransport{}, cmd.ErrOrStderr())
		},
	}
	d.register(cmd)
	cmd.Flags().StringVar(&model, "model", "", "model of the ask tool, as provider:model (default $CODERUN_MODEL)")
	cmd.Flags().StringVar(&policyFile, "policy", "", "policy file (YAML or JSON) instead of the default policy")
	return cmd
}

// runMCP serves the default tenant's MCP server on transport until the
// client goes away or ctx is done.
func runMCP(ctx context.Context, cfg *app.Config, transport sdk.Transport, stderr io.Writer) error {
	rt, err := openRuntime(cfg)
	if err != nil {
		return err
	}
	defer rt.Close()
	mgr, err := cfg.NewManager(rt)
	if err != nil {
		return err
	}
	defer mgr.Close()
	records, err := cfg.OpenStore(ctx, store.DefaultTenant)
	if err != nil {
		return err
	}
	defer records.Close()
	opts := cfg.MCPOptions(rt, mgr, func(_ context.Context, tenant string) (store.Tenant, error) {
		if tenant != store.DefaultTenant {
			return nil, fmt.Errorf("no records for tenant %q over stdio", tenant)
		}
		return records, nil
	}, version())
	opts.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	svc, err := mcp.New(opts)
	if err != nil {
		return err
	}
	return svc.Run(ctx, server.DefaultTenant, transport)
}
