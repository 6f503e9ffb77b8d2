package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/coderun/coderun/agent"
	"github.com/coderun/coderun/app"
	"github.com/coderun/coderun/internal/plural"
	"github.com/coderun/coderun/store"
	"github.com/spf13/cobra"
)

// dataFlags locate the store of agent runs.
type dataFlags struct {
	dir string
	g   *globalFlags
}

func (d *dataFlags) register(cmd *cobra.Command) {
	cmd.PersistentFlags().StringVar(&d.dir, "data-dir", "", "directory of the run records (default $CODERUN_DATA_DIR, else $XDG_DATA_HOME/coderun, else ~/.local/share/coderun)")
}

// flags are the store's flags.
func (d *dataFlags) flags() []binding {
	return []binding{{"data-dir", "store.data_dir", &d.dir}}
}

// open opens the CLI's tenant (the default one) of the configured store.
func (d *dataFlags) open(ctx context.Context) (*app.Store, error) {
	cfg, err := d.g.load(d.flags())
	if err != nil {
		return nil, err
	}
	return cfg.OpenStore(ctx, store.DefaultTenant)
}

// view opens the store for a command that only reads it: where there is no
// database yet, it reads an empty one instead of creating the data
// directory and a database.
func (d *dataFlags) view(ctx context.Context) (*app.Store, error) {
	cfg, err := d.g.load(d.flags())
	if err != nil {
		return nil, err
	}
	return cfg.ViewStore(ctx, store.DefaultTenant)
}

func newRunsCmd(g *globalFlags) *cobra.Command {
	d := &dataFlags{g: g}
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List, show, export, resume and summarise agent runs",
		Long: `Every agent run (coderun ask) is recorded step by step: model calls with their
messages, tokens and latency; code; policy findings; approvals; execution
results; classifications; retries; the answer or the failure report.`,
	}
	d.register(cmd)
	cmd.AddCommand(newRunsListCmd(d), newRunsShowCmd(d), newRunsExportCmd(d), newRunsStatsCmd(d), newRunsResumeCmd(g, d))
	return cmd
}

func newRunsListCmd(d *dataFlags) *cobra.Command {
	var status string
	var limit int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List runs, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := d.view(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			if err := checkStatus(status); err != nil {
				return err
			}
			runs, err := st.ListRuns(cmd.Context(), store.Filter{Status: store.Status(status), Limit: limit})
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), runs)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tCREATED\tSTATUS\tOUTCOME\tATTEMPTS\tMODEL\tTASK")
			for _, r := range runs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", r.ID, r.CreatedAt.Local().Format("2006-01-02 15:04:05"),
					shown(r).Shown, dash(r.Outcome), r.Scorecard.Attempts, r.Model, short(r.Task, 60))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&status, "status", "", "only runs in this status: running, interrupted, awaiting_approval, succeeded, failed, cancelled")
	cmd.Flags().IntVarP(&limit, "limit", "n", 50, "at most this many runs (0: all)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newRunsShowCmd(d *dataFlags) *cobra.Command {
	var asJSON, verbose bool
	var width int
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show a run step by step",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := d.view(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			exp, err := store.Gather(cmd.Context(), st, args[0], false)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), exp)
			}
			if width < 0 {
				return usagef("--width %d: want 0 (whole) or more", width)
			}
			return showRun(cmd.OutOrStdout(), exp, view{verbose: verbose, width: width})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the whole record as JSON (as runs export)")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "also show the messages sent to the model, and the tool calls whole")
	cmd.Flags().IntVar(&width, "width", defaultWidth, "with -v, show at most this many characters of each message (0: whole)")
	return cmd
}

func newRunsExportCmd(d *dataFlags) *cobra.Command {
	var format, output string
	var contents bool
	cmd := &cobra.Command{
		Use:   "export ID",
		Short: "Export a run as JSON or as a Jupyter notebook",
		Long: `Export a run's whole record as JSON (run, steps, files, review items), or as a
Jupyter notebook (nbformat 4): the task, each piece of code that ran with its
outputs and the images it wrote, notes on failures and approvals, and the answer
or the failure report.`,
		Example: `  coderun runs export 3f9a2c1b4d5e > run.json
  coderun runs export 3f9a --format ipynb -o run.ipynb`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := d.view(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			var data []byte
			switch format {
			case "json":
				exp, err := store.Gather(cmd.Context(), st, args[0], contents)
				if err != nil {
					return err
				}
				if data, err = json.MarshalIndent(exp, "", "  "); err != nil {
					return err
				}
			case "ipynb", "notebook":
				if data, err = agent.Notebook(cmd.Context(), st, args[0]); err != nil {
					return err
				}
			default:
				return usagef("--format %q: want json or ipynb", format)
			}
			data = append(data, '\n')
			if output == "" || output == "-" {
				_, err = cmd.OutOrStdout().Write(data)
				return err
			}
			return os.WriteFile(output, data, 0o644)
		},
	}
	cmd.Flags().StringVar(&format, "format", "json", "json or ipynb")
	cmd.Flags().StringVarP(&output, "output", "o", "", "write to this file instead of standard output")
	cmd.Flags().BoolVar(&contents, "contents", false, "include file contents in the JSON (base64)")
	return cmd
}

func newRunsStatsCmd(d *dataFlags) *cobra.Command {
	var since sinceFlag
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Aggregate the scorecards of runs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := d.view(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			var f store.Filter
			if since > 0 {
				f.Since = time.Now().Add(-time.Duration(since))
			}
			s, err := store.Summarize(cmd.Context(), st, f)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), statsJSON(s))
			}
			printStats(cmd.OutOrStdout(), s)
			return nil
		},
	}
	cmd.Flags().Var(&since, "since", "only runs created within this long (e.g. 90m, 24h, 7d)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newRunsResumeCmd(g *globalFlags, d *dataFlags) *cobra.Command {
	f := &agentFlags{}
	cmd := &cobra.Command{
		Use:   "resume ID",
		Short: "Continue a run that was interrupted or paused for approval",
		Long: `Continue a run from its last recorded step: a run whose process died
(interrupted), or one awaiting approval (the code is shown again at the
terminal, or decided by --approve all|none; without a terminal and without
either, the run stays paused and resume exits with status 3). The run keeps its own settings;
the model is the run's own unless --model says otherwise.

The process driving a run holds a lease on it, renewed while it lives; a run
whose process was killed shows as interrupted, and can be resumed, once the
lease has expired: 30s after its last renewal, or $CODERUN_LEASE.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return resumeRun(cmd.Context(), g, d, f, args[0], cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f.register(cmd, false)
	return cmd
}

func resumeRun(ctx context.Context, g *globalFlags, d *dataFlags, f *agentFlags, id string, stdin io.Reader, stdout, stderr io.Writer) error {
	cfg, err := g.load(g.runtimeFlags(), d.flags(), f.flags(false))
	if err != nil {
		return err
	}
	st, err := cfg.OpenStore(ctx, store.DefaultTenant)
	if err != nil {
		return err
	}
	run, err := st.GetRun(ctx, id)
	st.Close()
	if err != nil {
		return err
	}
	if run.Status.Final() {
		return fmt.Errorf("run %s has already ended (%s)", run.ID, run.Status)
	}
	// A paused run stays paused until a person decides: without a terminal
	// to ask at, and without --approve all|none, resume decides nothing.
	if run.Shown() == store.StatusAwaitingApproval && !decidesByFlag(cfg.Agent.Approve) && !onTerminal(stdin) {
		fmt.Fprintf(stderr, "coderun: run %s is awaiting approval and there is no terminal to ask at; it stays paused.\n"+
			"decide with: coderun review approve %s   (or: coderun review reject %s), or resume with --approve all|none\n",
			run.ID, run.ID, run.ID)
		return exitError{exitAwaiting}
	}
	// The run's own model, unless --model says otherwise.
	spec := run.Model
	if cfg.Source("model.spec").Kind == app.FromOverride {
		spec = cfg.Model.Spec
	}
	s, err := setupAgent(ctx, cfg, spec, agent.Mode(run.Mode), f.quiet, stdin, stderr)
	if err != nil {
		return err
	}
	defer s.close()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := s.agent.Resume(ctx, run.ID)
	if err != nil {
		return err
	}
	return finish(ctx, s.store, f, res, stdout, stderr)
}

// shown is where a run stands, for a person: its status as shown, or
// "approved, waiting to run"; for an interrupted run, whether code was
// running when its process died. A checkpoint it cannot read shows the
// stored status.
func shown(r *store.Run) agent.Standing {
	s, err := agent.RunStanding(r)
	if err != nil {
		return agent.Standing{Shown: string(r.Shown())}
	}
	return s
}

// ansi matches the terminal escapes (colours) of IPython's tracebacks.
var ansi = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]`) })

// decidesByFlag says whether an --approve setting decides flagged code
// without a person.
func decidesByFlag(approve string) bool {
	return approve == app.ApproveAll || approve == app.ApproveNone
}

// onTerminal says whether r is a terminal a person can answer at.
func onTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && isTerminal(f)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func short(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// view is how much of a run to show.
type view struct {
	// verbose shows the messages sent to the model and the tool calls.
	verbose bool
	// live is the progress of a run as it happens (the answer and the
	// failure report are printed at the end).
	live bool
	// width is how many characters of each message to show; 0: whole.
	// Tool calls are shown whole.
	width int
}

const defaultWidth = 200

// showRun renders a whole run for a person.
func showRun(w io.Writer, exp *store.Export, v view) error {
	verbose := v.verbose
	r := exp.Run
	standing := shown(r)
	fmt.Fprintf(w, "run %s   %s", r.ID, standing.Shown)
	if r.Outcome != "" {
		fmt.Fprintf(w, " (%s)", r.Outcome)
	}
	fmt.Fprintf(w, "\ntask:     %s\nmodel:    %s   mode: %s\ncreated:  %s", r.Task, r.Model, r.Mode, r.CreatedAt.Local().Format(time.RFC3339))
	if !r.FinishedAt.IsZero() {
		fmt.Fprintf(w, "   finished: %s", r.FinishedAt.Local().Format(time.RFC3339))
	}
	fmt.Fprintln(w)
	for _, in := range r.Inputs {
		fmt.Fprintf(w, "input:    %s: %s\n", in.Path, in.Summary)
	}
	fmt.Fprintln(w)
	for _, s := range exp.Steps {
		payload, err := agent.DecodeStep(s)
		if err != nil {
			return err
		}
		renderView(w, s, payload, v)
	}
	failure, err := agent.RunFailure(r)
	if err != nil {
		return err
	}
	if failure != nil && !verbose {
		fmt.Fprintf(w, "\n%s\n", failureText(*failure))
	}
	fmt.Fprintln(w)
	sc := r.Scorecard
	fmt.Fprintf(w, "scorecard: %s, %s, %s (%s), %d+%d tokens, model %s, execution %s, active %s\n",
		plural.Count(sc.Attempts, "attempt"), plural.Count(sc.Retries, "retry"), plural.Count(sc.ModelCalls, "model call"),
		plural.Count(sc.ProviderRetries, "provider retry"), sc.InputTokens, sc.OutputTokens, ms(sc.ModelMS), ms(sc.ExecMS), ms(sc.WallMS))
	if len(sc.ErrorKinds) > 0 {
		var parts []string
		for _, k := range store.SortedKeys(sc.ErrorKinds) {
			parts = append(parts, fmt.Sprintf("%s %d", k, sc.ErrorKinds[k]))
		}
		fmt.Fprintf(w, "errors:    %s\n", strings.Join(parts, ", "))
	}
	var outs []string
	for _, f := range exp.Files {
		if f.Role == store.RoleOutput {
			outs = append(outs, fmt.Sprintf("%s (%d bytes)", f.Path, f.Size))
		}
	}
	if len(outs) > 0 {
		fmt.Fprintf(w, "files:     %s\n", strings.Join(outs, ", "))
	}
	for _, it := range exp.Reviews {
		fmt.Fprintf(w, "review:    #%d %s, %s", it.ID, it.Kind, it.Status)
		if it.Resolution != "" {
			fmt.Fprintf(w, " (%s)", it.Resolution)
		}
		fmt.Fprintln(w)
	}
	switch {
	case standing.Shown == agent.Approved:
		fmt.Fprintf(w, "\nApproved, waiting to run: %s.\nRun it with coderun runs resume %s\n", standing.Note, r.ID)
	case r.Shown() == store.StatusInterrupted:
		fmt.Fprintf(w, "\nInterrupted: %s.\nThe run is not driven by any process: continue it with coderun runs resume %s\n", standing.Note, r.ID)
	case r.Shown() == store.StatusAwaitingApproval:
		fmt.Fprintf(w, "\nAwaiting approval: coderun review approve %s (or reject)\n", r.ID)
	}
	return nil
}

// renderStep writes one step: a header line, and what a person wants to
// see of it (the code, the output, the answer).
func renderStep(w io.Writer, s store.Step, payload any, verbose, live bool) {
	renderView(w, s, payload, view{verbose: verbose, live: live, width: defaultWidth})
}

// clip shortens text to width characters on one line; width 0 keeps it
// whole (its lines indented under the first).
func clip(text string, width int) string {
	if width == 0 {
		return strings.ReplaceAll(strings.TrimRight(text, "\n"), "\n", "\n        ")
	}
	return short(text, width)
}

// renderView writes one step as v says.
func renderView(w io.Writer, s store.Step, payload any, v view) {
	verbose, live := v.verbose, v.live
	tag := "    "
	if s.Attempt > 0 {
		tag = fmt.Sprintf("[%d] ", s.Attempt)
	}
	line := func(format string, args ...any) { fmt.Fprintf(w, tag+format+"\n", args...) }
	block := func(text string, max int) {
		text = strings.TrimRight(text, "\n")
		if text == "" {
			return
		}
		lines := strings.Split(text, "\n")
		if max > 0 && len(lines) > max {
			lines = append(append([]string{}, lines[:max/2]...), append([]string{fmt.Sprintf("… %d lines …", len(lines)-max)}, lines[len(lines)-max/2:]...)...)
		}
		for _, l := range lines {
			fmt.Fprintf(w, "      │ %s\n", l)
		}
	}
	switch p := payload.(type) {
	case *agent.Start:
		line("▶ %s", s.Summary)
	case *agent.ModelCall:
		line("model  %s", s.Summary)
		if verbose {
			if p.Prior > 0 {
				fmt.Fprintf(w, "      (after the %d messages sent before)\n", p.Prior)
			}
			for _, m := range p.Messages {
				role := string(m.Role)
				if m.ToolCallID != "" {
					role += " (" + m.ToolCallID + ")"
				}
				if m.Content != "" || len(m.ToolCalls) == 0 {
					fmt.Fprintf(w, "      %s: %s\n", role, clip(m.Content, v.width))
				}
				for _, c := range m.ToolCalls {
					fmt.Fprintf(w, "      %s: tool call %s (%s): %s\n", role, c.Name, c.ID, c.Arguments)
				}
			}
			if p.Text != "" {
				fmt.Fprintf(w, "      → %s\n", clip(p.Text, v.width))
			}
			for _, c := range p.ToolCalls {
				fmt.Fprintf(w, "      → tool call %s (%s): %s\n", c.Name, c.ID, c.Arguments)
			}
		}
	case *agent.CodeRecord:
		line("code   %s (%s)", s.Summary, p.Source)
		if p.Intent != "" {
			fmt.Fprintf(w, "      %s\n", short(p.Intent, 200))
		}
		block(p.Code, 40)
	case *agent.Review:
		line("policy %s", p.Decision.Action)
		if p.Decision.Action != "allow" {
			for _, f := range p.Decision.Causes {
				fmt.Fprintf(w, "      ! %s\n", f)
			}
		}
	case *agent.Approval:
		line("approval %s (%s)", p.Decision, p.By)
	case *agent.ExecutionRecord:
		line("ran    %s", s.Summary)
		block(p.Stdout, 30)
		if p.Stderr != "" {
			fmt.Fprintln(w, "      stderr:")
			block(p.Stderr, 16)
		}
		// A session's cell also has a result (its last expression) and,
		// when it raised, the traceback.
		for _, o := range p.Outputs {
			switch o.OutputType {
			case "execute_result":
				if text, ok := o.Data["text/plain"].(string); ok {
					fmt.Fprintf(w, "      result [%d]:\n", o.ExecutionCount)
					block(text, 30)
				}
			case "error":
				fmt.Fprintf(w, "      error: %s: %s\n", o.Ename, o.Evalue)
				block(ansi().ReplaceAllString(strings.Join(o.Traceback, "\n"), ""), 30)
			}
		}
	case *agent.Classification:
		if p.Class == agent.ClassSuccess {
			line("ok")
		} else {
			msg := string(p.Kind)
			if p.Message != "" && p.Class == agent.ClassRetryable {
				msg += ": " + p.Message
			} else {
				msg += ": " + p.Why
			}
			line("%s  %s", p.Class, short(msg, 200))
		}
	case *agent.Retry:
		line("retry  %d of %d (%s)", p.Number, p.Max, p.Reason)
	case *agent.Answer:
		line("answer")
		if !live {
			block(p.Text, 0)
		}
		if !p.Grounded {
			fmt.Fprintf(w, "      not verified: %s not in the output\n", strings.Join(p.Unsupported, ", "))
		}
	case *agent.FailureReport:
		line("no answer: %s", p.Outcome)
		if verbose && !live {
			block(failureText(*p), 0)
		}
	case *agent.Resume:
		line("resume %s", s.Summary)
		if p.Note != "" {
			fmt.Fprintf(w, "      %s\n", p.Note)
		}
	default:
		line("%s %s", s.Kind, s.Summary)
	}
}

// statsJSON is the JSON of runs stats: its times in milliseconds, named
// with _ms as the scorecards' are, not as Go durations (nanoseconds).
func statsJSON(s store.Stats) any {
	return struct {
		store.Stats
		ModelTime any   `json:"model_time,omitempty"`
		ExecTime  any   `json:"exec_time,omitempty"`
		WallTime  any   `json:"wall_time,omitempty"`
		ModelMS   int64 `json:"model_ms"`
		ExecMS    int64 `json:"exec_ms"`
		WallMS    int64 `json:"wall_ms"`
	}{Stats: s, ModelMS: s.ModelTime.Milliseconds(), ExecMS: s.ExecTime.Milliseconds(), WallMS: s.WallTime.Milliseconds()}
}

func printStats(w io.Writer, s store.Stats) {
	fmt.Fprintf(w, "runs:          %d", s.Runs)
	var parts []string
	for _, k := range store.SortedKeys(s.ByStatus) {
		parts = append(parts, fmt.Sprintf("%s %d", k, s.ByStatus[k]))
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, " (%s)", strings.Join(parts, ", "))
	}
	fmt.Fprintln(w)
	parts = nil
	for _, k := range store.SortedKeys(s.ByOutcome) {
		parts = append(parts, fmt.Sprintf("%s %d", k, s.ByOutcome[k]))
	}
	fmt.Fprintf(w, "outcomes:      %s\n", dash(strings.Join(parts, ", ")))
	fmt.Fprintf(w, "answered:      %.0f%% of ended runs; %.0f%% of answers on the first try\n", 100*s.Answered, 100*s.FirstTry)
	fmt.Fprintf(w, "attempts:      %d (%.2f per run), %s\n", s.Attempts, s.MeanAttempts, plural.Count(s.Retries, "retry"))
	type kv struct {
		k string
		v int
	}
	var kinds []kv
	for k, v := range s.ErrorKinds {
		kinds = append(kinds, kv{k, v})
	}
	sort.Slice(kinds, func(i, j int) bool {
		return kinds[i].v > kinds[j].v || kinds[i].v == kinds[j].v && kinds[i].k < kinds[j].k
	})
	parts = nil
	for _, x := range kinds {
		parts = append(parts, fmt.Sprintf("%s %d", x.k, x.v))
	}
	var classes []string
	for _, k := range store.SortedKeys(s.Errors) {
		classes = append(classes, fmt.Sprintf("%s %d", k, s.Errors[k]))
	}
	fmt.Fprintf(w, "errors:        %s", dash(strings.Join(classes, ", ")))
	if len(parts) > 0 {
		fmt.Fprintf(w, " — %s", strings.Join(parts, ", "))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "tokens:        %d in, %d out, %d model calls\n", s.InputTokens, s.OutputTokens, s.ModelCalls)
	fmt.Fprintf(w, "time:          model %s, execution %s, active %s\n", s.ModelTime.Round(time.Millisecond), s.ExecTime.Round(time.Millisecond), s.WallTime.Round(time.Millisecond))
	fmt.Fprintf(w, "approvals:     %d approved, %d rejected; %d open review items\n", s.Approvals, s.Rejections, s.ReviewsOpen)
}

// runStatuses are the statuses a run can be listed by.
var runStatuses = []store.Status{store.StatusRunning, store.StatusInterrupted, store.StatusAwaitingApproval,
	store.StatusSucceeded, store.StatusFailed, store.StatusCancelled}

// checkStatus refuses a --status no run can have.
func checkStatus(status string) error {
	if status == "" {
		return nil
	}
	var names []string
	for _, st := range runStatuses {
		if string(st) == status {
			return nil
		}
		names = append(names, string(st))
	}
	return usagef("--status %q: want one of %s", status, strings.Join(names, ", "))
}

// sinceFlag is a duration that also takes days ("7d", "1d12h").
type sinceFlag time.Duration

func (f *sinceFlag) String() string {
	if *f == 0 {
		return ""
	}
	return time.Duration(*f).String()
}

func (f *sinceFlag) Type() string { return "duration" }

func (f *sinceFlag) Set(v string) error {
	days := 0
	if d, rest, ok := strings.Cut(v, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n < 0 {
			return fmt.Errorf("%q: want a duration such as 90m, 24h or 7d", v)
		}
		days, v = n, rest
	}
	var d time.Duration
	if v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil || d < 0 {
			return fmt.Errorf("%q: want a duration such as 90m, 24h or 7d", v)
		}
	}
	*f = sinceFlag(time.Duration(days)*24*time.Hour + d)
	return nil
}
