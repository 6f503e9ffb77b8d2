package agent

import (
	"fmt"
	"strings"
	"time"

	"github.com/coderun/coderun/llm"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/store"
)

// What goes to the model, in one place.

// maxObservation bounds the output shown to the model per execution.
const maxObservation = 8000

// environment tells the model what the sandbox offers and allows: the
// interpreters, the Python packages detected there, no network, and each
// execution's limits.
func environment(cfg runConfig) string {
	var b strings.Builder
	b.WriteString("The sandbox has Python 3")
	if len(cfg.Packages) > 0 {
		b.WriteString(" (with " + strings.Join(cfg.Packages, ", ") + ")")
	}
	b.WriteString(", bash and node, no network access, and the working directory /work, which holds the user's files. ")
	l := cfg.Limits.WithDefaults(sandbox.DefaultLimits)
	fmt.Fprintf(&b, "Each execution may take at most %s of wall time", l.WallTime)
	if l.CPUTime > 0 {
		fmt.Fprintf(&b, " and %s of CPU time", l.CPUTime)
	}
	fmt.Fprintf(&b, ", and use at most %s of memory; past a limit it is stopped. ", sandbox.FormatBytes(l.Memory))
	return b.String()
}

func systemPrompt(cfg runConfig) string {
	var b strings.Builder
	b.WriteString("You answer tasks by writing code that computes the answer; the code runs in an isolated sandbox and you see its real output. ")
	b.WriteString(environment(cfg))
	b.WriteString("Never guess or invent a value: compute it, and print every result the task needs, clearly labelled. ")
	b.WriteString("To make a plot, use matplotlib with the Agg backend, save it as a PNG file in the working directory, and print the file's name.\n\n")
	switch cfg.Mode {
	case ModeSteps:
		b.WriteString("You work in a persistent Python session: variables, imports and files carry over from one cell to the next. ")
		b.WriteString("Work in small steps: look at the data first, then compute. ")
		if cfg.Format == FormatFenced {
			b.WriteString("Each reply holds one cell in one fenced code block (```python ... ```); you will see its output. ")
			b.WriteString("When the outputs so far hold everything the task needs, reply with a short message without any code block.")
		} else {
			b.WriteString("Each call to the run_code tool runs one cell; you will see its output. ")
			b.WriteString("When the outputs so far hold everything the task needs, reply with a short message without calling the tool.")
		}
	default:
		b.WriteString("Write one complete program that does the whole task. ")
		if cfg.Format == FormatFenced {
			b.WriteString("Reply with the program in one fenced code block tagged with its language (```python ... ```). ")
		} else {
			b.WriteString("Run it with the run_code tool, one call per reply. ")
		}
		b.WriteString("If it fails you will see the error; then reply with the complete corrected program.")
	}
	return b.String()
}

func taskPrompt(task string, inputs []store.InputFile) string {
	var b strings.Builder
	b.WriteString("Task: ")
	b.WriteString(task)
	if len(inputs) > 0 {
		b.WriteString("\n\nFiles in the working directory:")
		for _, in := range inputs {
			fmt.Fprintf(&b, "\n- %s: %s", in.Path, in.Summary)
		}
	}
	return b.String()
}

// observation is what the model sees of an execution.
func observation(ex *ExecutionRecord, v verdict, files []FileMeta) string {
	var b strings.Builder
	switch v.Class {
	case ClassSuccess:
		b.WriteString("The code ran successfully.\n")
	default:
		fmt.Fprintf(&b, "The code failed: %s\n", v.errorLine())
	}
	if ex.Stdout != "" {
		b.WriteString("stdout:\n")
		b.WriteString(clip(ex.Stdout, maxObservation))
		if !strings.HasSuffix(ex.Stdout, "\n") {
			b.WriteString("\n")
		}
	} else {
		b.WriteString("stdout: (empty)\n")
	}
	detail := v.Detail
	if v.Class == ClassSuccess {
		detail = tail(ex.Stderr, 15, 2000)
	}
	for _, o := range ex.Outputs {
		if o.OutputType == "execute_result" || o.OutputType == "display_data" {
			if t, ok := o.Data["text/plain"].(string); ok && t != "" {
				fmt.Fprintf(&b, "result: %s\n", clip(t, 2000))
			}
			if _, ok := o.Data["image/png"]; ok {
				b.WriteString("(displayed an image)\n")
			}
		}
	}
	if detail != "" {
		b.WriteString("stderr (last lines):\n")
		b.WriteString(detail)
		b.WriteString("\n")
	}
	if len(files) > 0 {
		b.WriteString("files created or changed:")
		for _, f := range files {
			fmt.Fprintf(&b, " %s (%d bytes);", f.Path, f.Size)
		}
		b.WriteString("\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

func retryInstruction(cfg runConfig, kind Kind, retry, max int) string {
	left := max - retry + 1
	s := fmt.Sprintf("Fix the error (retry %d of %d, %d left). ", retry, max, left-1)
	if kind == KindNoCode || kind == KindTruncatedReply {
		s = fmt.Sprintf("Write the code (retry %d of %d, %d left). ", retry, max, left-1)
	}
	if cfg.Mode == ModeSteps {
		if cfg.Format == FormatFenced {
			return s + "Reply with the corrected cell in one fenced code block."
		}
		return s + "Call run_code with the corrected cell."
	}
	if cfg.Format == FormatFenced {
		return s + "Reply with the complete corrected program in one fenced code block."
	}
	return s + "Call run_code with the complete corrected program."
}

const noCodeFeedback = "No code was run. Do not answer from memory: write code that computes the answer"

func interpretSystem() string {
	return "You write the final answer to a task from the results of code that was run for it. " +
		"Rest the answer on the output shown: quote the computed values exactly as they were printed, " +
		"do not compute anything new and do not add values that the output does not show. Be brief and direct.\n\n" +
		"Reply with one JSON object and nothing else:\n" +
		`{"answers": true, "answer": "the answer to the task"}` + "\n" +
		"or, when the output does not answer the task (a value is missing, the code computed something else, the output shows an error):\n" +
		`{"answers": false, "reason": "what is missing and what the code should compute instead"}`
}

// interpretPrompt shows the task, the code that ran and its real output.
func interpretPrompt(task string, inputs []store.InputFile, cells []cell) string {
	var b strings.Builder
	b.WriteString(taskPrompt(task, inputs))
	for i, c := range cells {
		if len(cells) > 1 {
			fmt.Fprintf(&b, "\n\nCell %d (%s):\n```%s\n%s\n```", i+1, c.Language, c.Language, strings.TrimRight(c.Code, "\n"))
		} else {
			fmt.Fprintf(&b, "\n\nCode (%s):\n```%s\n%s\n```", c.Language, c.Language, strings.TrimRight(c.Code, "\n"))
		}
		out := c.Stdout
		if c.Result != "" {
			out += c.Result
		}
		if strings.TrimSpace(out) == "" {
			b.WriteString("\nOutput: (none)")
		} else {
			fmt.Fprintf(&b, "\nOutput:\n```\n%s\n```", strings.TrimRight(clip(out, maxObservation), "\n"))
		}
		if len(c.Files) > 0 {
			names := make([]string, len(c.Files))
			for i, f := range c.Files {
				names[i] = fmt.Sprintf("%s (%d bytes)", f.Path, f.Size)
			}
			fmt.Fprintf(&b, "\nFiles written: %s", strings.Join(names, ", "))
		}
	}
	b.WriteString("\n\nWrite the answer to the task as the JSON object described.")
	return b.String()
}

func groundingFeedback(unsupported []string) string {
	return "Your answer quotes " + strings.Join(unsupported, ", ") +
		", which the output does not show. Answer again using only values that appear in the output."
}

// notAnsweredFeedback goes back to the model that writes the code when the
// interpretation found that the output does not answer the task.
func notAnsweredFeedback(reason string) string {
	return "The output of the code does not answer the task: " + reason +
		"\nWrite code that computes and prints what the task asks for."
}

// timeoutInstruction tells the model the wall-time limit its code ran past.
func timeoutInstruction(limit time.Duration) string {
	return fmt.Sprintf("The code was stopped when it ran past its wall-time limit of %s. "+
		"Write code that finishes well within %s: a faster algorithm, less work, no waiting or endless loops.", limit, limit)
}

// runCodeTool is the run_code tool as the mode runs it: in steps mode each
// call is a cell of one persistent session, not a fresh sandbox.
func runCodeTool(mode Mode) llm.Tool {
	t := llm.RunCodeTool()
	if mode == ModeSteps {
		t.Description = "Run one cell of Python in the persistent session and return its output, " +
			"results and errors: variables, imports and files carry over from earlier cells. " +
			"Use it to compute, check or inspect anything rather than guessing. Print whatever you need to see."
	}
	return t
}
