package toolchain

import (
	"context"
	"strings"

	"github.com/coderun/coderun/language"
	"github.com/coderun/coderun/sandbox"
)

// Status says whether a language can run on a runtime, with which
// toolchain version, and why not when it cannot.
type Status struct {
	Language language.Language `json:"language"`
	Title    string            `json:"title"`
	// Available: the toolchain is installed and its version probe ran in
	// a sandbox.
	Available bool `json:"available"`
	// Version is the first line the version probe printed.
	Version string `json:"version,omitempty"`
	// Reason says why the language is not available.
	Reason string `json:"reason,omitempty"`
	// Tool is the toolchain's binary; Packages the Debian packages that
	// install it.
	Tool     string   `json:"tool,omitempty"`
	Packages []string `json:"packages"`
	// Compiled: runs have a compile step (and a compile result).
	Compiled bool `json:"compiled"`
	// SandboxFusion lists SandboxFusion's names for the language.
	SandboxFusion []string `json:"sandbox_fusion,omitempty"`
}

// Check finds lang's toolchain under root ("" for the host's) and runs
// its version probe in a sandbox of rt (as a Bash program: rt need not
// be wrapped). Nothing is run for a toolchain that is not installed.
func Check(ctx context.Context, rt sandbox.Runtime, root string, lang language.Language) Status {
	spec, ok := language.Lookup(lang)
	if !ok {
		return Status{Language: lang, Reason: "unknown language"}
	}
	st := Status{Language: lang, Title: spec.Title, Packages: spec.Packages, Compiled: spec.Compiled(), SandboxFusion: spec.SandboxFusion}
	tool, err := Find(root, spec)
	if err != nil {
		st.Reason = strings.TrimPrefix(strings.TrimPrefix(err.Error(), sandbox.ErrInvalid.Error()+": "), sandbox.ErrUnavailable.Error()+": ")
		return st
	}
	st.Tool = tool
	env := map[string]string{}
	for k, v := range spec.Env {
		env[k] = strings.ReplaceAll(v, "{cache}", CacheDir)
	}
	res, err := rt.Run(ctx, sandbox.Request{Language: sandbox.Bash, Env: env,
		Code: prepare(env) + "exec " + quoteArgs(spec.VersionCommand(tool)) + " 2>&1"})
	switch {
	case err != nil:
		st.Reason = "version probe: " + err.Error()
	case !res.OK():
		st.Reason = "version probe: " + res.Summary() + ": " + firstLine(res.Stdout+res.Stderr)
	default:
		st.Available, st.Version = true, firstLine(res.Stdout)
	}
	return st
}

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}
