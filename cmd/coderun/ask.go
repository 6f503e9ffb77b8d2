package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/coderun/coderun/agent"
	"github.com/coderun/coderun/agent/telemetry"
	"github.com/coderun/coderun/app"
	"github.com/coderun/coderun/internal/plural"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/store"
	"github.com/spf13/cobra"
)

// Exit codes of the agent commands.
const (
	exitNoAnswer = 1 // the run ended without an answer (honest failure report)
	exitAwaiting = 3 // the run paused, awaiting approval
	// exitUnverified: the run ended with an answer quoting values the
	// output does not show (answered_unverified): printed, flagged, queued
	// for review, and not a success.
	exitUnverified = 4
)

// agentFlags configure how an agent runs: the model, the approvals, the
// budgets and the limits.
type agentFlags struct {
	model          string
	format         string
	approve        string
	policyFile     string
	maxRetries     int
	timeoutRetries int
	maxSteps       int
	maxTokens      int64
	maxTime        time.Duration
	wall           time.Duration
	cpu            time.Duration
	memory         string
	out            string
	json           bool
	quiet          bool
}

func (f *agentFlags) register(cmd *cobra.Command, withSettings bool) {
	fl := cmd.Flags()
	fl.StringVar(&f.model, "model", "", "model as provider:model, e.g. openai:gpt-4.1-mini, anthropic:claude-sonnet-4-5, ollama:qwen2.5-coder (default $CODERUN_MODEL; for a stored run, its own)")
	fl.StringVar(&f.approve, "approve", "ask", "code the policy flags: ask (at the terminal; rejected when not interactive), all, none, or defer (pause the run for coderun review approve)")
	fl.StringVar(&f.policyFile, "policy", "", "policy file (YAML or JSON) instead of the default policy")
	fl.StringVar(&f.out, "out", "", "save the files and plots the run produced into this directory")
	fl.BoolVar(&f.json, "json", false, "print the result as JSON")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no live progress on standard error")
	if !withSettings {
		return
	}
	fl.StringVar(&f.format, "format", "tool", "how the model hands over code: tool (native run_code tool) or fenced (code blocks, for models without tool calling)")
	fl.IntVar(&f.maxRetries, "max-retries", agent.DefaultMaxRetries, "how often the model may fix failing code")
	fl.IntVar(&f.timeoutRetries, "timeout-retries", agent.DefaultTimeoutRetries, "how often the model may rewrite code that ran past its time limit, told the limit")
	fl.IntVar(&f.maxSteps, "max-steps", agent.DefaultMaxSteps, "cells at most in steps mode")
	fl.Int64Var(&f.maxTokens, "max-tokens", 0, "token budget of the run (input plus output, 0: none)")
	fl.DurationVar(&f.maxTime, "max-time", 0, "time budget of the run (0: none)")
	d := sandbox.DefaultLimits
	fl.DurationVarP(&f.wall, "timeout", "t", d.WallTime, "wall-time limit of each execution")
	fl.DurationVar(&f.cpu, "cpu-time", d.CPUTime, "CPU-time limit of each execution")
	fl.StringVarP(&f.memory, "memory", "m", sandbox.FormatBytes(d.Memory), "memory limit of each execution")
}

// flags are the agent flags a command has: they override the
// configuration's agent.*, model.spec and limits.* (per execution).
func (f *agentFlags) flags(withSettings bool) []binding {
	bs := []binding{
		{"model", "model.spec", &f.model},
		{"approve", "agent.approve", &f.approve},
		{"policy", "agent.policy", &f.policyFile},
	}
	if withSettings {
		bs = append(bs, []binding{
			{"format", "agent.format", &f.format},
			{"max-retries", "agent.max_retries", &f.maxRetries},
			{"timeout-retries", "agent.timeout_retries", &f.timeoutRetries},
			{"max-steps", "agent.max_steps", &f.maxSteps},
			{"max-tokens", "agent.max_tokens", &f.maxTokens},
			{"max-time", "agent.max_time", &f.maxTime},
			{"timeout", "limits.timeout", &f.wall},
			{"cpu-time", "limits.cpu_time", &f.cpu},
			{"memory", "limits.memory", &f.memory},
		}...)
	}
	return bs
}

func newAskCmd(g *globalFlags) *cobra.Command {
	f := &agentFlags{}
	d := &dataFlags{g: g}
	var files []string
	var mode string
	cmd := &cobra.Command{
		Use:   "ask TASK",
		Short: "Have a model answer a task by writing and running code",
		Long: `Have a model answer a task by writing code, running it in a sandbox and
interpreting its real output.

The task and the shapes of the --file inputs (a CSV's header and row count,
never the data) go to the model, which writes code; the policy reviews it
(allow, ask, deny); it runs in a sandbox with the limits given; errors go back
to the model with the traceback, up to --max-retries times; a separate call
writes the answer from the output. When the retries or budgets run out, an
honest failure report is printed instead of an answer, and the run goes to
the review queue (coderun review list).

Modes: single (one program, retried until it works) or steps (several cells
in a persistent Python session with observations between them).

Code the policy flags waits for yes / no / always at the terminal; without a
terminal it is rejected unless --approve all. --approve defer pauses the run
(exit status 3): decide with coderun review approve|reject ID.

Every step is recorded (coderun runs show ID). Ctrl-C cancels cleanly.

Exit status: 0 answered; 1 no answer (failure report); 3 awaiting approval;
4 answered but unverified (the answer quotes values the output does not show);
130 cancelled; 2 bad flags.`,
		Example: `  coderun ask "What is the mean of 120, 80, 200, 150?"
  coderun ask "Plot sales by month" --file sales.csv --out results/
  coderun ask "Which region grew fastest?" --file sales.csv --mode steps --model anthropic:claude-sonnet-4-5`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.load(g.runtimeFlags(), d.flags(), f.flags(true), []binding{{"mode", "agent.mode", &mode}})
			if err != nil {
				return err
			}
			return runAsk(cmd.Context(), cfg, f, args[0], files, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f.register(cmd, true)
	d.register(cmd)
	cmd.Flags().StringArrayVarP(&files, "file", "f", nil, "input file LOCAL[:REMOTE] placed in the workspace (repeatable)")
	cmd.Flags().StringVar(&mode, "mode", "single", "single (one program, retried) or steps (cells in a persistent session)")
	return cmd
}

// agentSetup is everything an agent command opened, to close at the end.
type agentSetup struct {
	agent    *agent.Agent
	store    *app.Store
	rt       sandbox.Runtime
	shutdown func(context.Context) error
}

func (s *agentSetup) close() {
	if s.shutdown != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		s.shutdown(ctx)
		cancel()
	}
	if s.rt != nil {
		s.rt.Close()
	}
	if s.store != nil {
		s.store.Close()
	}
}

// setupAgent builds the model, the runtime, the store and the agent from
// the configuration. modelSpec "" means the configured model; mode ""
// the configured mode. Code the policy asks about is asked at the terminal
// when standard input is one.
func setupAgent(ctx context.Context, cfg *app.Config, modelSpec string, mode agent.Mode, quiet bool,
	stdin io.Reader, stderr io.Writer) (*agentSetup, error) {
	reviewer, err := cfg.Reviewer()
	if err != nil {
		return nil, err
	}
	model, spec, err := cfg.OpenModel(modelSpec, os.Getenv)
	if err != nil {
		return nil, err
	}
	parts := app.AgentParts{Model: model, ModelSpec: spec, Mode: mode, Reviewer: reviewer}
	if f, ok := stdin.(*os.File); ok && isTerminal(f) {
		parts.Approver = terminalApprover{in: bufio.NewReader(stdin), out: stderr}
	}
	if !quiet {
		parts.Observer = agentProgress(stderr)
	}
	s := &agentSetup{}
	if s.store, err = cfg.OpenStore(ctx, store.DefaultTenant); err != nil {
		return nil, err
	}
	parts.Store = s.store
	if s.rt, err = openRuntime(cfg); err != nil {
		s.close()
		return nil, err
	}
	parts.Runtime = s.rt
	if parts.Tracer, s.shutdown, err = telemetry.FromEnv(ctx, os.Getenv, "dev"); err != nil {
		s.close()
		return nil, err
	}
	if s.agent, err = cfg.NewAgent(parts); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

func runAsk(ctx context.Context, cfg *app.Config, f *agentFlags, task string, files []string,
	stdin io.Reader, stdout, stderr io.Writer) error {
	inputs, err := readUploads(files, cfg.Limits.WorkspaceBytes)
	if err != nil {
		return err
	}
	s, err := setupAgent(ctx, cfg, "", "", f.quiet, stdin, stderr)
	if err != nil {
		return err
	}
	defer s.close()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := s.agent.Run(ctx, agent.Task{Prompt: task, Files: inputs})
	if err != nil {
		return err
	}
	return finish(ctx, s.store, f, res, stdout, stderr)
}

// finish prints a run's result, saves its files, and turns it into an exit
// status.
func finish(ctx context.Context, st store.Tenant, f *agentFlags, res *agent.Result, stdout, stderr io.Writer) error {
	var saved []string
	if f.out != "" {
		var err error
		if saved, err = saveRunFiles(context.WithoutCancel(ctx), st, res.RunID, f.out); err != nil {
			fmt.Fprintln(stderr, "coderun: --out:", err)
		}
	}
	if f.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			*agent.Result
			Saved []string `json:"saved,omitempty"`
		}{res, saved}); err != nil {
			return err
		}
	} else {
		printResult(stdout, stderr, res, saved)
	}
	switch res.Status {
	case store.StatusSucceeded:
		if res.Outcome == agent.OutcomeUnverified {
			return exitError{exitUnverified}
		}
		return nil
	case store.StatusAwaitingApproval:
		return exitError{exitAwaiting}
	case store.StatusCancelled:
		return exitError{exitKilled}
	}
	return exitError{exitNoAnswer}
}

func printResult(stdout, stderr io.Writer, res *agent.Result, saved []string) {
	switch {
	case res.Answer != nil:
		fmt.Fprintln(stdout, res.Answer.Text)
		if !res.Answer.Grounded {
			fmt.Fprintf(stdout, "\nUNVERIFIED: this answer quotes %s, which the output of the code does not show; do not rely on it (coderun review show %s).\n",
				strings.Join(res.Answer.Unsupported, ", "), res.RunID)
			fmt.Fprintf(stderr, "coderun: warning: the answer quotes %s, which the output does not show; the run is in the review queue\n",
				strings.Join(res.Answer.Unsupported, ", "))
		}
	case res.Status == store.StatusAwaitingApproval:
		fmt.Fprintf(stderr, "coderun: run %s is awaiting approval:\n", res.RunID)
		if res.Pending != nil {
			fmt.Fprintln(stderr, indent(res.Pending.Explanation, "  "))
		}
		fmt.Fprintf(stderr, "decide with: coderun review approve %s   (or: coderun review reject %s)\n", res.RunID, res.RunID)
	case res.Failure != nil:
		fmt.Fprintln(stdout, failureText(*res.Failure))
	}
	for _, p := range saved {
		fmt.Fprintln(stderr, "saved", p)
	}
	sc := res.Scorecard
	fmt.Fprintf(stderr, "run %s: %s", res.RunID, res.Status)
	if res.Outcome != "" {
		fmt.Fprintf(stderr, " (%s)", res.Outcome)
	}
	fmt.Fprintf(stderr, "; %s, %s, %s, model %s, execution %s\n", plural.Count(sc.Attempts, "attempt"), plural.Count(sc.Retries, "retry"),
		plural.Count(int(sc.Tokens()), "token"), ms(sc.ModelMS), ms(sc.ExecMS))
}

func failureText(f agent.FailureReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "No answer (%s).\n%s\n", f.Outcome, f.Summary)
	if f.Intent != "" {
		fmt.Fprintf(&b, "What the code was trying to do: %s\n", f.Intent)
	}
	if h := f.ErrorHeading(); h != "" {
		fmt.Fprintf(&b, "%s: %s\n", h, f.Error)
	}
	if f.PartialOutput != "" {
		fmt.Fprintf(&b, "Partial output of the last attempt:\n%s\n", indent(f.PartialOutput, "  "))
	}
	return strings.TrimRight(b.String(), "\n")
}

// saveRunFiles writes the files a run produced into dir (the latest
// version of each path).
func saveRunFiles(ctx context.Context, st store.Tenant, runID, dir string) ([]string, error) {
	files, err := st.Files(ctx, runID, store.RoleOutput)
	if err != nil {
		return nil, err
	}
	var infos []sandbox.FileInfo
	var saved []string
	for _, f := range files {
		infos = append(infos, sandbox.FileInfo{Path: f.Path, Kind: sandbox.FileKind(f.Kind), Size: f.Size, Mode: f.Mode,
			LinkTarget: f.LinkTarget, Content: f.Content, ContentTruncated: f.Truncated})
		if f.Kind == string(sandbox.KindFile) {
			saved = append(saved, filepath.Join(dir, filepath.FromSlash(f.Path)))
		}
	}
	if len(infos) == 0 {
		return nil, nil
	}
	return saved, saveFiles(dir, infos)
}

// terminalApprover shows flagged code at the terminal and waits for
// yes / no / always.
type terminalApprover struct {
	in  *bufio.Reader
	out io.Writer
}

func (t terminalApprover) Approve(ctx context.Context, req agent.ApprovalRequest) (agent.Verdict, error) {
	fmt.Fprintf(t.out, "\nThe policy asks before this %s code runs:\n", req.Language)
	lines := strings.Split(strings.TrimRight(req.Code, "\n"), "\n")
	flagged := map[int]bool{}
	for _, f := range req.Decision.Causes {
		flagged[f.Line] = true
	}
	for i, l := range lines {
		mark := " "
		if flagged[i+1] {
			mark = "!"
		}
		fmt.Fprintf(t.out, "  %s%4d │ %s\n", mark, i+1, l)
	}
	for _, f := range req.Decision.Causes {
		fmt.Fprintf(t.out, "  ! %s\n", f)
	}
	for {
		fmt.Fprint(t.out, "Run it? [y]es / [n]o / [a]lways for these rules: ")
		type answer struct {
			line string
			err  error
		}
		ch := make(chan answer, 1)
		go func() {
			l, err := t.in.ReadString('\n')
			ch <- answer{l, err}
		}()
		select {
		case <-ctx.Done():
			fmt.Fprintln(t.out)
			return "", ctx.Err()
		case a := <-ch:
			if a.err != nil && strings.TrimSpace(a.line) == "" {
				fmt.Fprintln(t.out)
				return agent.Reject, nil // end of input: no
			}
			switch strings.ToLower(strings.TrimSpace(a.line)) {
			case "y", "yes":
				return agent.Approve, nil
			case "n", "no", "":
				return agent.Reject, nil
			case "a", "always":
				return agent.Always, nil
			}
		}
	}
}

// progress renders each stored step as it happens.
func agentProgress(w io.Writer) func(agent.Event) {
	return func(e agent.Event) {
		renderStep(w, e.Step, e.Payload, false, true)
	}
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n")
}

func ms(n int64) string { return (time.Duration(n) * time.Millisecond).String() }
