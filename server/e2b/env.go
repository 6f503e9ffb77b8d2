package e2b

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/session"
)

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func validEnvNames(env map[string]string) error {
	for k, v := range env {
		if !envName.MatchString(k) {
			return fmt.Errorf("env_vars: %q is not a variable name", k)
		}
		if strings.ContainsRune(v, 0) {
			return fmt.Errorf("env_vars: the value of %s contains a NUL byte", k)
		}
	}
	return nil
}

// applyEnv sets env in the context's interpreter for one execution, and
// returns what restores the variables as they were.
func applyEnv(ctx context.Context, c *codeContext, env map[string]string) (func(context.Context) error, error) {
	if len(env) == 0 {
		return nil, nil
	}
	if c.sess.Language() == sandbox.Bash {
		names := make([]string, 0, len(env))
		for k := range env {
			names = append(names, k)
		}
		sort.Strings(names)
		var set, undo strings.Builder
		for _, k := range names {
			fmt.Fprintf(&set, "if [ \"${%[1]s+x}\" ]; then __cre_%[1]s_set=1; __cre_%[1]s=\"$%[1]s\"; else __cre_%[1]s_set=0; fi; export %[1]s=%[2]s\n", k, shellQuote(env[k]))
			fmt.Fprintf(&undo, "if [ \"$__cre_%[1]s_set\" = 1 ]; then export %[1]s=\"$__cre_%[1]s\"; else unset %[1]s; fi; unset __cre_%[1]s __cre_%[1]s_set\n", k)
		}
		if err := silentCell(ctx, c.sess, set.String()); err != nil {
			return nil, err
		}
		return func(ctx context.Context) error { return silentCell(ctx, c.sess, undo.String()) }, nil
	}
	var res struct {
		Old map[string]*string `json:"old"`
	}
	if err := runHelper(ctx, c.sess, helperCall{op: "env", args: map[string]any{"set": env}}, &res); err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		return runHelper(ctx, c.sess, helperCall{op: "env", args: map[string]any{"set": res.Old}}, nil)
	}, nil
}

// silentCell runs a bash cell whose outputs nobody sees, and fails if it
// failed.
func silentCell(ctx context.Context, sess *session.Session, code string) error {
	cell, err := sess.Execute(ctx, session.Exec{Code: code, Timeout: helperTimeout})
	if err != nil {
		return err
	}
	if cell.Status != session.StatusOK {
		return fmt.Errorf("%s: %s", cell.Status, strings.TrimSpace(cell.Stderr()))
	}
	return nil
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
