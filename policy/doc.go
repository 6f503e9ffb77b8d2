// Package policy is coderun's pre-flight review of model-written code: it
// reads Python or shell source on the trusted side, before anything runs in
// the sandbox, and decides whether the code may run (allow), needs a person's
// approval first (ask), or must not run at all (deny).
//
// The review has two halves.
//
// Analysis turns code into [Finding]s: each names a [Rule] from a fixed
// catalogue ([Rules]), with a [Severity], the line and column, the source
// line as a snippet and a sentence a person can read. Python is parsed with
// a real parser: a small analyser script, embedded in this package, runs
// under Debian's /usr/bin/python3 in isolated mode and uses the ast module
// to parse (never to execute) the code it is handed on stdin. It resolves
// aliases (import subprocess as sp; from os import system as s;
// getattr(os, "system"); __import__("subprocess")), looks inside
// exec("...") strings, and hands every shell command line it can see
// (os.system("..."), subprocess.run([...])) back to the shell analyser.
// Shell is read by a tokenizer written in Go that knows quoting, escapes,
// line continuations, here-documents, command and process substitution,
// pipelines, functions and the usual wrappers (sudo, env, nohup, ...); it
// hands `python3 -c` and `python3 <<EOF` code back to the Python analyser
// the same way. Because session cells run under IPython, Python code may also
// hold IPython syntax (!cmd, x = !cmd, %pip, %sx, %%bash cells); code that
// does not parse as Python is rewritten line for line into Python and its
// shell parts are reviewed as shell.
//
// A [Policy] maps findings to a [Decision]: by rule id, by rule group
// ("destructive.*"), or by severity, with the strictest outcome winning.
// [DefaultPolicy] denies destructive shell, asks about process spawning,
// network, native code, dynamic code and paths outside the workspace, and
// allows the rest. Policies load from YAML or JSON files ([ParsePolicy],
// [LoadPolicy]). A Decision carries the findings that caused it and a
// paragraph that explains it to a person or back to the model.
//
// Network code is the one case where what the sandbox can do changes the
// decision: in a sandbox without network access ([Reviewer.Offline],
// [Policy.DecideOffline]) a network finding the policy would ask about is
// denied instead — a person's approval cannot make it work, it would only
// fail later — with an explanation that tells the model to do without the
// network. A policy that allows network code lets it run (and fail, with
// a note in the explanation); one that denies it denies it.
//
// [Reviewer.Review] (or the package-level [Review]) does both halves;
// [Reviewer.Analyze] does only the first.
//
// The files of the package follow that story: rules.go (the catalogue),
// finding.go, python.go with analyze_python.py, shell_parse.go (the
// tokenizer) and shell_check.go (the shell rules), paths.go (what is inside
// the workspace), policy.go and file.go (decisions and policy files),
// explain.go, and review.go, which ties them together.
//
// The policy layer is an early "stop or ask", not the security boundary:
// the sandbox is. Static analysis of a dynamic language cannot see
// everything (aliases bound in an earlier session cell, values computed at
// run time). Where code hides what it runs (eval of a computed string,
// bash -c "$x", base64 -d | sh) the review reports that as a finding of
// its own; what it cannot see at all, the sandbox still contains.
package policy
