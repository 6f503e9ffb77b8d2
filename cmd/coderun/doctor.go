package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/linux"
	"github.com/spf13/cobra"
)

func newDoctorCmd(g *globalFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Report which isolation layers this host provides, and try a run",
		Long: `Report, for this host, each isolation layer the linux runtime uses: available or
not, and why. Then start a real sandbox for each language and run a trivial
program in it. Exits non-zero when a required layer is missing or a trial fails.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDoctor(cmd.Context(), g, asJSON, cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

type trial struct {
	Language sandbox.Language `json:"language"`
	OK       bool             `json:"ok"`
	Detail   string           `json:"detail"`
}

func runDoctor(ctx context.Context, g *globalFlags, asJSON bool, w io.Writer) error {
	report := linux.Probe()
	requireErr := report.Require(g.allowWeaker)
	var trials []trial
	if requireErr == nil {
		rt, err := g.open()
		if err != nil {
			requireErr = err
		} else {
			defer rt.Close()
			for _, lang := range sandbox.Languages() {
				trials = append(trials, tryLanguage(ctx, rt, lang, g.rootFS))
			}
		}
	}
	ok := requireErr == nil
	for _, t := range trials {
		ok = ok && t.OK
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(map[string]any{"layers": report.Layers, "trials": trials, "ok": ok})
	} else {
		fmt.Fprintln(w, "Isolation layers (linux runtime):")
		for _, l := range report.Layers {
			mark := "ok  "
			switch {
			case !l.Available && l.Required:
				mark = "FAIL"
			case !l.Available:
				mark = "--  "
			}
			req := ""
			if !l.Required {
				req = " (optional)"
			}
			fmt.Fprintf(w, "  [%s] %-18s %s%s\n", mark, l.Name, l.Detail, req)
		}
		if requireErr != nil {
			fmt.Fprintf(w, "\n%v\n", requireErr)
		}
		if len(trials) > 0 {
			fmt.Fprintln(w, "\nTrial runs:")
			for _, t := range trials {
				mark := "ok  "
				if !t.OK {
					mark = "FAIL"
				}
				fmt.Fprintf(w, "  [%s] %-8s %s\n", mark, t.Language, t.Detail)
			}
		}
	}
	if !ok {
		return exitError{1}
	}
	return nil
}

var trialCode = map[sandbox.Language]string{
	sandbox.Python: "import sys; print(sys.version.split()[0])",
	sandbox.Bash:   "echo $BASH_VERSION",
	sandbox.Node:   "console.log(process.version)",
}

func tryLanguage(ctx context.Context, rt sandbox.Runtime, lang sandbox.Language, rootFS string) trial {
	in, _ := sandbox.LookupInterpreter(lang)
	if rootFS == "" {
		rootFS = "/"
	}
	if _, err := os.Stat(rootFS + in.Path); err != nil {
		return trial{Language: lang, Detail: fmt.Sprintf("not installed (%s missing)", in.Path)}
	}
	start := time.Now()
	res, err := rt.Run(ctx, sandbox.Request{Language: lang, Code: trialCode[lang]})
	if err != nil {
		return trial{Language: lang, Detail: err.Error()}
	}
	if !res.OK() {
		return trial{Language: lang, Detail: res.Summary() + ": " + res.Stderr}
	}
	return trial{Language: lang, OK: true, Detail: fmt.Sprintf("%s %s in %s", in.Path, trimNL(res.Stdout), time.Since(start).Round(time.Millisecond))}
}

func trimNL(s string) string {
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == '\r') {
		s = s[:len(s)-1]
	}
	return s
}
