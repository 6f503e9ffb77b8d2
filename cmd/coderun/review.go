package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"text/tabwriter"

	"github.com/coderun/coderun/agent"
	"github.com/coderun/coderun/store"
	"github.com/spf13/cobra"
)

func newReviewCmd(g *globalFlags) *cobra.Command {
	d := &dataFlags{g: g}
	cmd := &cobra.Command{
		Use:   "review",
		Short: "The review queue: runs awaiting approval, failed runs, unverified answers",
		Long: `The review queue holds the runs a person should look at: code waiting for
approval (approval), runs that ended without an answer (failure), and answers
quoting values the output does not show (unverified_answer). The list also
shows the runs waiting to be resumed (coderun runs resume), without an item
number: interrupted ones, whose process died, and approved ones whose code
has not run yet.`,
	}
	d.register(cmd)
	cmd.AddCommand(newReviewListCmd(d), newReviewShowCmd(d), newReviewDecideCmd(g, d, true), newReviewDecideCmd(g, d, false),
		newReviewCloseCmd(d))
	return cmd
}

func newReviewListCmd(d *dataFlags) *cobra.Command {
	var all, asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List open review items, oldest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := d.view(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			items, err := st.Reviews(cmd.Context(), "", all)
			if err != nil {
				return err
			}
			stopped, err := stoppedRuns(cmd.Context(), st)
			if err != nil {
				return err
			}
			items = append(items, stopped...)
			if asJSON {
				if items == nil {
					items = []store.ReviewItem{}
				}
				return writeJSON(cmd.OutOrStdout(), items)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ITEM\tRUN\tKIND\tSTATUS\tCREATED\tTASK\tREASON")
			for _, it := range items {
				task := ""
				if r, err := st.GetRun(cmd.Context(), it.RunID); err == nil {
					task = r.Task
				}
				status := it.Status
				if it.Resolution != "" {
					status += " (" + it.Resolution + ")"
				}
				id := strconv.FormatInt(it.ID, 10)
				if it.ID == 0 {
					id = "-" // a run to resume, not an item to close
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", id, it.RunID, it.Kind, status,
					it.CreatedAt.Local().Format("2006-01-02 15:04"), short(task, 40), short(it.Reason, 80))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "closed items too")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newReviewShowCmd(d *dataFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "show RUN",
		Short: "Show what a run in the queue needs: the pending code and findings, or the failure report",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := d.view(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			run, err := st.GetRun(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			items, err := st.Reviews(cmd.Context(), run.ID, true)
			if err != nil {
				return err
			}
			return showReview(cmd.OutOrStdout(), run, items)
		},
	}
}

func showReview(w io.Writer, run *store.Run, items []store.ReviewItem) error {
	pending, err := agent.RunPending(run)
	if err != nil {
		return err
	}
	failure, err := agent.RunFailure(run)
	if err != nil {
		return err
	}
	standing := shown(run)
	fmt.Fprintf(w, "run %s   %s", run.ID, standing.Shown)
	if run.Outcome != "" {
		fmt.Fprintf(w, " (%s)", run.Outcome)
	}
	fmt.Fprintf(w, "\ntask:  %s\nmodel: %s\n", run.Task, run.Model)
	for _, it := range items {
		fmt.Fprintf(w, "item #%d: %s, %s", it.ID, it.Kind, it.Status)
		if it.Resolution != "" {
			fmt.Fprintf(w, " (%s", it.Resolution)
			if it.Note != "" {
				fmt.Fprintf(w, ": %s", it.Note)
			}
			fmt.Fprint(w, ")")
		}
		fmt.Fprintf(w, "\n  %s\n", it.Reason)
	}
	if standing.Note != "" {
		fmt.Fprintf(w, "\n%s.\ncoderun runs resume %s\n", standing.Note, run.ID)
	}
	if p := pending; p != nil {
		fmt.Fprintf(w, "\nCode awaiting approval (%s):\n%s\n", p.Language, indent(p.Code, "  │ "))
		for _, f := range p.Findings {
			fmt.Fprintf(w, "  ! %s\n", f)
		}
		fmt.Fprintf(w, "\n%s\n\ncoderun review approve %s   |   coderun review reject %s\n", p.Explanation, run.ID, run.ID)
	}
	if failure != nil {
		fmt.Fprintf(w, "\n%s\n", failureText(*failure))
		if failure.LastCode != "" {
			fmt.Fprintf(w, "Last code (%s):\n%s\n", failure.Language, indent(failure.LastCode, "  │ "))
		}
	}
	if run.Answer != "" {
		fmt.Fprintf(w, "\nAnswer:\n%s\n", indent(run.Answer, "  "))
	}
	return nil
}

// newReviewDecideCmd is "review approve" or "review reject".
func newReviewDecideCmd(g *globalFlags, d *dataFlags, approve bool) *cobra.Command {
	var note, by string
	var noResume, always bool
	f := &agentFlags{}
	use, short := "reject RUN", "Reject the code a run awaits approval for: the model is told (with the note) and may rewrite it"
	if approve {
		use, short = "approve RUN", "Approve the code a run awaits approval for, and resume the run"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			st, err := d.open(ctx)
			if err != nil {
				return err
			}
			v := agent.Reject
			if approve {
				v = agent.Approve
				if always {
					v = agent.Always
				}
			}
			res, err := agent.Decide(ctx, st, args[0], v, by, note)
			st.Close()
			if err != nil {
				return err
			}
			out, errw := cmd.OutOrStdout(), cmd.ErrOrStderr()
			decided := "approved"
			if !approve {
				if res.Status.Final() {
					// No retries were left: the rejection ended the run.
					fmt.Fprintf(errw, "run %s: rejected; no retries left, the run ended (%s)\n", res.RunID, res.Outcome)
					return nil
				}
				decided = "rejected; the model is told and may rewrite the code"
			}
			if noResume {
				fmt.Fprintf(errw, "run %s: %s; continue it with coderun runs resume %s\n", res.RunID, decided, res.RunID)
				return nil
			}
			fmt.Fprintf(errw, "run %s: %s; resuming\n", res.RunID, decided)
			return resumeRun(ctx, g, d, f, res.RunID, cmd.InOrStdin(), out, errw)
		},
	}
	cmd.Flags().StringVar(&note, "note", "", "a note recorded with the decision")
	cmd.Flags().StringVar(&by, "by", defaultReviewer(), "who decides, as recorded")
	if approve {
		cmd.Flags().BoolVar(&always, "always", false, "also approve code flagged by the same rules for the rest of the run")
	}
	cmd.Flags().BoolVar(&noResume, "no-resume", false, "only record the decision; resume later with coderun runs resume")
	f.register(cmd, false)
	return cmd
}

// The kinds of the rows review list adds for runs no process drives,
// which are not review items (they have no item number): they are resumed,
// not closed.
const (
	kindInterrupted store.ReviewKind = "interrupted"
	kindApproved    store.ReviewKind = "approved"
	kindRejected    store.ReviewKind = "rejected"
)

// stoppedRuns are the runs no process drives that wait to be resumed:
// interrupted ones (their process died) and approved ones not run yet, as
// rows of the review list.
func stoppedRuns(ctx context.Context, st store.Tenant) ([]store.ReviewItem, error) {
	runs, err := st.ListRuns(ctx, store.Filter{Status: store.StatusInterrupted})
	if err != nil {
		return nil, err
	}
	var items []store.ReviewItem
	for _, r := range runs {
		s := shown(r)
		kind := kindInterrupted
		switch s.Shown {
		case agent.Approved:
			kind = kindApproved
		case agent.Rejected:
			kind = kindRejected
		}
		items = append(items, store.ReviewItem{Tenant: r.Tenant, RunID: r.ID, Kind: kind, Reason: s.Note,
			CreatedAt: r.CreatedAt, Status: store.ReviewOpen})
	}
	return items, nil
}

func defaultReviewer() string {
	if u := os.Getenv("USER"); u != "" {
		return "review queue (" + u + ")"
	}
	return "review queue"
}

func newReviewCloseCmd(d *dataFlags) *cobra.Command {
	var note, resolution string
	cmd := &cobra.Command{
		Use:   "close ITEM",
		Short: "Close a failure or unverified-answer item once a person has dealt with it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil {
				return usagef("ITEM %q: want the item number from coderun review list", args[0])
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			st, err := d.open(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			items, err := st.Reviews(ctx, "", true)
			if err != nil {
				return err
			}
			for _, it := range items {
				if it.ID == id && it.Kind == store.ReviewApproval {
					return usagef("item %d is an approval: use coderun review approve|reject %s", id, it.RunID)
				}
			}
			return st.CloseReview(context.WithoutCancel(ctx), id, resolution, note)
		},
	}
	cmd.Flags().StringVar(&note, "note", "", "what was done about it")
	cmd.Flags().StringVar(&resolution, "resolution", "resolved", "how it was resolved")
	return cmd
}
