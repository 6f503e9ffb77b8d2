package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coderun/coderun/app"
	"github.com/coderun/coderun/jupyter"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/session"
	"github.com/spf13/cobra"
)

// sessionFlags configure the session of repl and notebook run.
type sessionFlags struct {
	lang      string
	files     []string
	env       []string
	preload   []string
	timeout   time.Duration
	cpuTime   time.Duration
	grace     time.Duration
	memory    string
	procs     int
	output    string
	workspace string
}

func (f *sessionFlags) register(cmd *cobra.Command, langHelp string) {
	fl := cmd.Flags()
	d := session.DefaultLimits
	fl.StringVarP(&f.lang, "lang", "l", "", langHelp)
	fl.StringArrayVarP(&f.files, "file", "f", nil, "upload a file: LOCAL[:REMOTE], REMOTE relative to the workspace (repeatable)")
	fl.StringArrayVarP(&f.env, "env", "e", nil, "environment variable KEY=VALUE (repeatable)")
	fl.StringSliceVar(&f.preload, "preload", nil, "Python modules to import before the first cell (e.g. numpy,pandas,matplotlib.pyplot)")
	fl.DurationVarP(&f.timeout, "timeout", "t", d.WallTime, "time limit per cell: past it the cell is interrupted, state kept")
	fl.DurationVar(&f.cpuTime, "cpu-time", d.CPUTime, "CPU-time limit per cell (user+system, of all it runs): past it the cell is interrupted, state kept; 0: none")
	fl.DurationVar(&f.grace, "grace", session.DefaultGrace, "how long an interrupted cell has to stop before the interpreter is restarted")
	fl.StringVarP(&f.memory, "memory", "m", sandbox.FormatBytes(d.Memory), "memory limit of the session")
	fl.IntVar(&f.procs, "processes", d.Processes, "processes and threads alive at once in the session")
	fl.StringVar(&f.output, "output-limit", sandbox.FormatBytes(d.OutputBytes), "output kept per cell; the rest is discarded")
	fl.StringVar(&f.workspace, "workspace-size", sandbox.FormatBytes(d.WorkspaceBytes), "bytes writable in /work, /tmp and /dev/shm together")
}

// flags are the session's flags: they override the configuration's
// session.*.
func (f *sessionFlags) flags() []binding {
	return []binding{
		{"timeout", "session.timeout", &f.timeout},
		{"cpu-time", "session.cpu_time", &f.cpuTime},
		{"grace", "session.grace", &f.grace},
		{"memory", "session.memory", &f.memory},
		{"processes", "session.processes", &f.procs},
		{"output-limit", "session.output_limit", &f.output},
		{"workspace-size", "session.workspace_size", &f.workspace},
		{"preload", "session.preload", &f.preload},
	}
}

// config is the session's configuration from c, with the flags' language
// (lang when --lang is not given), environment and files.
func (f *sessionFlags) config(c *app.Config, lang sandbox.Language) (session.Config, error) {
	cfg := c.SessionConfig(lang)
	if f.lang != "" {
		cfg.Language = sandbox.Language(f.lang)
	}
	l := cfg.Limits
	if l.WallTime <= 0 || cfg.Grace <= 0 || l.Processes <= 0 || l.Memory <= 0 || l.OutputBytes <= 0 || l.WorkspaceBytes <= 0 {
		return cfg, usagef("limits must be positive")
	}
	var err error
	if cfg.Env, err = parseKV(f.env, "--env"); err != nil {
		return cfg, err
	}
	if cfg.Files, err = readUploads(f.files, cfg.Limits.WorkspaceBytes); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// openSession builds the runtime and a session in it.
func openSession(ctx context.Context, c *app.Config, cfg session.Config) (*session.Session, func(), error) {
	rt, err := openRuntime(c)
	if err != nil {
		return nil, nil, err
	}
	irt, err := app.Interactive(rt)
	if err != nil {
		rt.Close()
		return nil, nil, err
	}
	s, err := session.New(ctx, irt, cfg)
	if err != nil {
		rt.Close()
		return nil, nil, err
	}
	return s, func() { s.Close(); rt.Close() }, nil
}

type replFlags struct {
	sessionFlags
	images string
	save   string
	json   bool
}

func newReplCmd(g *globalFlags) *cobra.Command {
	f := &replFlags{}
	cmd := &cobra.Command{
		Use:   "repl",
		Short: "An interactive session: cells keep their state, outputs are shown as they come",
		Long: `Start a session (IPython for Python, an interactive bash for bash) in a sandbox and
execute the cells read from standard input, printing their outputs as they arrive.

Input: a cell is one or more lines ended by an empty line (or the end of input).
For code with empty lines in it, fence the cell: a line "` + "```" + `" (optionally
"` + "```python" + `") opens it and the next "` + "```" + `" line closes it. These lines, alone in a cell,
are commands: :help, :files, :restart, :save FILE.ipynb, :quit (or Ctrl-D).

Outputs: stdout and stderr as written; the value of the last expression as Out[n];
rich outputs as their text/plain form, and images (PNG, SVG, JPEG) saved under
--images, with the path printed; errors with their traceback. In a terminal,
Ctrl-C interrupts the running cell (state is kept). When standard input is not a
terminal, each cell read is executed in turn and no prompts are shown; the exit
status is then 1 if any cell did not end ok.`,
		Example: `  coderun repl
  coderun repl --lang bash
  printf 'x = 6\n\nx * 7\n' | coderun repl
  coderun repl --preload numpy,pandas,matplotlib.pyplot --images plots/ --save session.ipynb`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRepl(cmd.Context(), g, f, os.Stdin, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f.register(cmd, "language: python or bash (default python)")
	fl := cmd.Flags()
	fl.StringVar(&f.images, "images", "coderun-images", "directory where images are saved")
	fl.StringVar(&f.save, "save", "", "write the session as a Jupyter notebook to this file at the end")
	fl.BoolVar(&f.json, "json", false, "print each cell as one JSON line instead of rendering its outputs")
	return cmd
}

func runRepl(ctx context.Context, g *globalFlags, f *replFlags, stdin *os.File, stdout, stderr io.Writer) error {
	c, err := g.load(g.runtimeFlags(), f.flags())
	if err != nil {
		return err
	}
	cfg, err := f.config(c, sandbox.Python)
	if err != nil {
		return err
	}
	interactive := isTerminal(stdin)
	if interactive {
		fmt.Fprintf(stderr, "coderun repl: starting a %s session…\n", cfg.Language)
	}
	s, closeAll, err := openSession(ctx, c, cfg)
	if err != nil {
		return err
	}
	defer closeAll()
	if interactive {
		fmt.Fprintf(stderr, "%s in a sandbox. End a cell with an empty line; :help for commands.\n", s.Info().Interpreter)
	}
	// Ctrl-C interrupts the running cell; at the prompt it drops the input.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	quit := make(chan struct{})
	var quitOnce sync.Once
	go func() {
		for sig := range sigs {
			if sig == syscall.SIGTERM || !interactive {
				quitOnce.Do(func() { close(quit) })
			} else if !s.Info().Busy {
				fmt.Fprintln(stderr, "\n(Ctrl-D or :quit leaves)")
			}
			s.Interrupt()
		}
	}()

	r := &replRenderer{s: s, out: stdout, errw: stderr, images: f.images, json: f.json}
	in := &cellReader{br: bufio.NewReader(stdin)}
	prompt := func(continued bool) {
		switch {
		case !interactive:
		case continued:
			fmt.Fprint(stderr, "   ...: ")
		default:
			fmt.Fprintf(stderr, "In [%d]: ", len(s.History())+1)
		}
	}
	failed := 0
	for {
		code, more := in.next(prompt)
		if !more {
			break
		}
		select {
		case <-quit:
			return exitError{exitKilled}
		default:
		}
		switch strings.TrimSpace(code) {
		case ":quit", ":q", ":exit":
			return r.finish(f.save, failed, interactive)
		case ":help":
			fmt.Fprintln(stderr, "cells end with an empty line, or are fenced by ``` lines; commands: :files, :restart, :save FILE.ipynb, :quit")
			continue
		case ":files":
			files, _, err := s.Files()
			if err != nil {
				return err
			}
			for _, fi := range files {
				fmt.Fprintf(stdout, "%-8s %10d  %s\n", fi.Kind, fi.Size, fi.Path)
			}
			continue
		case ":restart":
			if err := s.Restart(ctx); err != nil {
				return err
			}
			fmt.Fprintln(stderr, "coderun: restarted: variables are gone, files are kept")
			continue
		}
		if path, ok := strings.CutPrefix(strings.TrimSpace(code), ":save "); ok {
			if err := saveNotebook(s.Export(), strings.TrimSpace(path)); err != nil {
				fmt.Fprintln(stderr, "coderun:", err)
			} else {
				fmt.Fprintln(stderr, "coderun: saved", strings.TrimSpace(path))
			}
			continue
		}
		cell, err := s.Execute(ctx, session.Exec{Code: code, OnOutput: r.live})
		if err != nil {
			return err
		}
		if cell.Status != session.StatusOK {
			failed++
		}
		r.cellEnd(cell)
	}
	return r.finish(f.save, failed, interactive)
}

// cellReader reads cells: lines up to an empty line, or between ```
// fences.
type cellReader struct {
	br *bufio.Reader
}

// next returns the next cell; ok is false at the end of input. prompt is
// called before each line with whether the cell has begun.
func (c *cellReader) next(prompt func(continued bool)) (code string, ok bool) {
	var lines []string
	fenced := false
	for {
		prompt(len(lines) > 0 || fenced)
		line, err := c.br.ReadString('\n')
		if err != nil && line == "" {
			code = strings.Join(lines, "\n")
			return code, strings.TrimSpace(code) != ""
		}
		line = strings.TrimRight(line, "\r\n")
		trimmed := strings.TrimSpace(line)
		switch {
		case !fenced && len(lines) == 0 && strings.HasPrefix(trimmed, "```"):
			fenced = true
		case fenced && trimmed == "```", !fenced && trimmed == "":
			if code = strings.Join(lines, "\n"); strings.TrimSpace(code) != "" {
				return code, true
			}
			lines, fenced = nil, false
		default:
			lines = append(lines, line)
		}
		if err != nil {
			code = strings.Join(lines, "\n")
			return code, strings.TrimSpace(code) != ""
		}
	}
}

// replRenderer prints a session's outputs for a person.
type replRenderer struct {
	s      *session.Session
	out    io.Writer
	errw   io.Writer
	images string
	json   bool
	mu     sync.Mutex
	saved  int
}

func (r *replRenderer) live(o session.Output) {
	if r.json {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch o.Type {
	case session.TypeStream:
		if o.Name == "stderr" {
			io.WriteString(r.errw, o.Text)
		} else {
			io.WriteString(r.out, o.Text)
		}
	case session.TypeExecuteResult:
		fmt.Fprintf(r.out, "Out[%d]: %s\n", o.ExecutionCount, r.render(o))
	case session.TypeDisplayData, session.TypeUpdateDisplayData:
		fmt.Fprintln(r.out, r.render(o))
	case session.TypeError:
		fmt.Fprintln(r.errw, strings.Join(o.Traceback, "\n"))
	}
}

// render returns the text of a rich output, saving its images.
func (r *replRenderer) render(o session.Output) string {
	var notes []string
	for _, mime := range []string{"image/png", "image/jpeg", "image/svg+xml"} {
		if _, ok := o.Data[mime]; !ok {
			continue
		}
		data, err := o.Data.Bytes(mime)
		if err != nil {
			notes = append(notes, err.Error())
			continue
		}
		ext := map[string]string{"image/png": ".png", "image/jpeg": ".jpg", "image/svg+xml": ".svg"}[mime]
		r.saved++
		path := filepath.Join(r.images, fmt.Sprintf("%s-%03d%s", r.s.ID()[:8], r.saved, ext))
		if err := os.MkdirAll(r.images, 0o755); err != nil {
			notes = append(notes, err.Error())
			continue
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			notes = append(notes, err.Error())
			continue
		}
		size := ""
		if mime == "image/png" {
			if cfg, err := png.DecodeConfig(bytes.NewReader(data)); err == nil {
				size = fmt.Sprintf(" %dx%d", cfg.Width, cfg.Height)
			}
		}
		notes = append(notes, fmt.Sprintf("[%s%s saved to %s]", mime, size, path))
	}
	text := o.Data.Text("text/plain")
	if j, ok := o.Data["application/json"]; ok {
		b, _ := json.MarshalIndent(j, "", "  ")
		text = string(b)
	} else if text == "" && o.Data.Text("text/html") != "" {
		text = o.Data.Text("text/html")
	}
	if len(notes) > 0 {
		if text != "" && !strings.HasPrefix(text, "<") {
			return text + " " + strings.Join(notes, " ")
		}
		return strings.Join(notes, " ")
	}
	return text
}

func (r *replRenderer) cellEnd(c *session.Cell) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.json {
		b, _ := json.Marshal(c)
		fmt.Fprintln(r.out, string(b))
		return
	}
	switch {
	case c.Status == session.StatusOK && c.Ended == nil:
	case c.Status == session.StatusOK:
		fmt.Fprintf(r.errw, "coderun: %s\n", c.Ended.Message)
	default:
		line := fmt.Sprintf("coderun: cell %d: %s after %s", c.Index, c.Status, c.Duration.Round(time.Millisecond))
		if c.Ended != nil && c.Ended.Message != "" {
			// How the interpreter ended (the memory limit, exit, a signal).
			line += ": " + c.Ended.Message
		}
		if c.Restarted {
			line += "; the interpreter was restarted (variables are gone, files are kept)"
		}
		if c.RestartError != "" {
			line += "; restart failed: " + c.RestartError
		}
		fmt.Fprintln(r.errw, line)
	}
}

func (r *replRenderer) finish(save string, failed int, interactive bool) error {
	if save != "" {
		if err := saveNotebook(r.s.Export(), save); err != nil {
			return err
		}
		fmt.Fprintln(r.errw, "coderun: saved", save)
	}
	if failed > 0 && !interactive {
		return exitError{1}
	}
	return nil
}

// saveNotebook writes nb to path ("-": standard output).
func saveNotebook(nb *jupyter.Notebook, path string) error {
	var buf bytes.Buffer
	if _, err := nb.WriteTo(&buf); err != nil {
		return err
	}
	if path == "-" {
		_, err := os.Stdout.Write(buf.Bytes())
		return err
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("save notebook: %w", err)
	}
	return nil
}
