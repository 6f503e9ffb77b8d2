package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/coderun/coderun/app"
	"github.com/coderun/coderun/language"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/docker"
	"github.com/coderun/coderun/sandbox/gvisor"
	"github.com/coderun/coderun/sandbox/linux"
	"github.com/coderun/coderun/sandbox/toolchain"
	"github.com/spf13/cobra"
)

func newDoctorCmd(g *globalFlags) *cobra.Command {
	var asJSON, clean bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Report which isolation layers this host provides, and try a run",
		Long: `Report, for this host, each isolation layer the linux runtime uses: available or
not, and why. Then start a real sandbox for each language and run a trivial
program in it. Exits non-zero when a required layer is missing or a trial fails.

It also lists what coderun processes that were killed (kill -9) left behind,
found before the trial runs: their cgroups under any "coderun" cgroup parent,
their directories and mounts under the state directory (/run/coderun), and the
per-sandbox cgroups of older coderun versions. A coderun that starts reclaims
those of its own cgroup and state directory; --clean removes them all now (never
anything of a coderun process still running), and exits non-zero if something
could not be removed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDoctor(cmd.Context(), g, asJSON, clean, cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	cmd.Flags().BoolVar(&clean, "clean", false, "remove what killed coderun processes left behind (cgroups, state directories, mounts)")
	return cmd
}

type trial struct {
	Language sandbox.Language `json:"language"`
	OK       bool             `json:"ok"`
	Detail   string           `json:"detail"`
}

func runDoctor(ctx context.Context, g *globalFlags, asJSON, clean bool, w io.Writer) error {
	cfg, err := g.load(g.runtimeFlags())
	if err != nil {
		return err
	}
	// The host report is about the linux runtime, whichever is configured.
	settings, _ := linuxSettings(cfg)
	report := linux.Probe()
	requireErr := report.Require(settings.AllowWeaker)
	// Before the trials: the runtime they start reclaims some of it.
	found, leftErr := linux.Leftovers(settings.StateDir)
	leftovers := make([]doctorLeftover, len(found))
	for i, l := range found {
		leftovers[i] = doctorLeftover{Leftover: l}
	}
	var cleanErr error
	if clean {
		_, cleanErr = linux.CleanLeftovers(settings.StateDir)
		left, err := linux.Leftovers(settings.StateDir)
		if err == nil {
			// Whatever is still listed was not removed: mark it so.
			still := map[string]bool{}
			for _, l := range left {
				still[l.Kind+" "+l.Path] = true
			}
			for i := range leftovers {
				leftovers[i].Removed = !still[leftovers[i].Kind+" "+leftovers[i].Path]
			}
		}
	}
	runtimes := runtimeStatuses(ctx, cfg, requireErr)
	// The host's layers gate the trials only when the linux runtime is the
	// one they start.
	if cfg.Runtime.Name != linux.Name {
		requireErr = nil
	}
	var trials []trial
	var langs []toolchain.Status
	if requireErr == nil {
		rt, err := openRuntime(cfg)
		if err != nil {
			requireErr = err
		} else {
			defer rt.Close()
			for _, lang := range sandbox.Languages() {
				trials = append(trials, tryLanguage(ctx, rt, lang, settings.RootFS))
			}
			for _, lang := range language.All() {
				langs = append(langs, toolchain.Check(ctx, rt, settings.RootFS, lang))
			}
		}
	}
	ok := requireErr == nil && cleanErr == nil
	for _, t := range trials {
		ok = ok && t.OK
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		rep := map[string]any{"layers": report.Layers, "runtimes": runtimes, "trials": trials, "languages": langs, "ok": ok, "leftovers": leftovers}
		if leftErr != nil {
			rep["leftovers_error"] = leftErr.Error()
		}
		if clean {
			rep["cleaned"] = cleanErr == nil
			if cleanErr != nil {
				rep["clean_error"] = cleanErr.Error()
			}
		}
		_ = enc.Encode(rep)
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
		fmt.Fprintln(w, "\nRuntimes:")
		for _, r := range runtimes {
			mark := "ok  "
			if !r.Available {
				mark = "--  "
			}
			sel := ""
			if r.Selected {
				sel = " (selected)"
			}
			fmt.Fprintf(w, "  [%s] %-8s %s%s\n", mark, r.Name, r.Detail, sel)
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
		printLanguages(w, langs)
		printLeftovers(w, leftovers, leftErr, clean, cleanErr)
	}
	if !ok {
		return exitError{1}
	}
	return nil
}

// runtimeStatus is one registered runtime's availability on this host.
type runtimeStatus struct {
	Name      string `json:"name"`
	Available bool   `json:"available"`
	Detail    string `json:"detail"` // its version, or why it is not available
	Selected  bool   `json:"selected"`
}

// runtimeStatuses reports each registered runtime: the linux runtime by
// the host's layers (linuxErr) and kernel, the docker runtime by its
// engine's version.
func runtimeStatuses(ctx context.Context, cfg *app.Config, linuxErr error) []runtimeStatus {
	var out []runtimeStatus
	for _, name := range sandbox.Drivers() {
		st := runtimeStatus{Name: name, Selected: name == cfg.Runtime.Name}
		switch name {
		case linux.Name:
			st.Available, st.Detail = linuxErr == nil, "kernel "+kernelRelease()
			if linuxErr != nil {
				st.Detail = "the host lacks a required isolation layer (above)"
			}
		case docker.Name:
			var host string
			if s, ok := cfg.Runtime.Options[name].(*docker.Settings); ok {
				host = s.Host
			}
			v, err := docker.Version(ctx, host)
			st.Available, st.Detail = err == nil, v
			if err != nil {
				st.Detail = err.Error()
			}
		case gvisor.Name:
			var runsc string
			if s, ok := cfg.Runtime.Options[name].(*gvisor.Settings); ok {
				runsc = s.Runsc
			}
			v, err := gvisor.Version(ctx, runsc)
			st.Available, st.Detail = err == nil, v
			if err != nil {
				st.Detail = err.Error()
			}
		default:
			st.Available, st.Detail = true, "registered (no availability check)"
		}
		out = append(out, st)
	}
	return out
}

// kernelRelease is the running kernel's release, or "unknown".
func kernelRelease() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

// printLanguages lists every language: its toolchain's version, or why it
// cannot run here (a missing toolchain is not a failure of doctor's).
func printLanguages(w io.Writer, langs []toolchain.Status) {
	if len(langs) == 0 {
		return
	}
	fmt.Fprintln(w, "\nLanguages (scripts/setup.sh installs their toolchains):")
	for _, l := range langs {
		if l.Available {
			fmt.Fprintf(w, "  [ok  ] %-10s %s (%s)\n", l.Language, l.Version, l.Tool)
		} else {
			fmt.Fprintf(w, "  [--  ] %-10s %s\n", l.Language, l.Reason)
		}
	}
}

// doctorLeftover is a linux.Leftover in doctor's report.
type doctorLeftover struct {
	linux.Leftover
	// Removed: doctor --clean removed it.
	Removed bool `json:"removed,omitempty"`
}

func printLeftovers(w io.Writer, leftovers []doctorLeftover, leftErr error, clean bool, cleanErr error) {
	fmt.Fprintln(w, "\nLeft behind by killed coderun processes:")
	if len(leftovers) == 0 {
		fmt.Fprintln(w, "  nothing")
	}
	what := map[string]string{
		"cgroup":      "cgroup of dead process %d",
		"flat_cgroup": "cgroup of an older coderun's sandbox",
		"state_dir":   "state directory of dead process %d",
		"mount":       "mount left by dead process %d",
	}
	for _, l := range leftovers {
		desc := what[l.Kind]
		if strings.Contains(desc, "%d") {
			desc = fmt.Sprintf(desc, l.Owner)
		}
		mark := ""
		switch {
		case clean && l.Removed:
			mark = " (removed)"
		case clean:
			mark = " (NOT removed)"
		}
		fmt.Fprintf(w, "  %s: %s%s\n", desc, l.Path, mark)
	}
	if leftErr != nil {
		fmt.Fprintf(w, "  (the search was incomplete: %v)\n", leftErr)
	}
	switch {
	case cleanErr != nil:
		fmt.Fprintf(w, "  some could not be removed: %v\n", cleanErr)
	case len(leftovers) > 0 && !clean:
		fmt.Fprintln(w, "  remove them with: coderun doctor --clean")
	}
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
