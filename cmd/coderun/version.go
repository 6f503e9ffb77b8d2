package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// release is coderun's version; builds from a git checkout add the commit.
const release = "0.2.0-dev"

// version is the release, with the commit and its date when the binary was
// built from a git checkout ("+dirty" when it had uncommitted changes).
func version() string {
	v := release
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	var rev, at, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" {
		v += fmt.Sprintf(" (%s%s, %s)", rev, dirty, at)
	}
	return v
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print coderun's version (also: coderun --version)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(cmd.OutOrStdout(), "coderun %s %s/%s %s\n", version(), runtime.GOOS, runtime.GOARCH, runtime.Version())
			return nil
		},
	}
}
