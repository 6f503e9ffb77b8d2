package main

import (
	"fmt"
	"os"
	"time"

	"github.com/coderun/coderun/sandbox/docker"
	"github.com/spf13/cobra"
)

// newImageCmd is "coderun image": the docker runtime's image.
func newImageCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Build the docker runtime's image locally",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newImageBuildCmd())
	return cmd
}

func newImageBuildCmd() *cobra.Command {
	var rootfs, tag, host, suite, mirror, from string
	var rebuild bool
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Build the docker runtime's image locally, without a registry",
		Long: `Build the image the docker runtime runs programs in: Python 3 with numpy, pandas,
matplotlib and IPython, and Node (Debian's packages), imported into the Docker
Engine as --tag through its API. No registry is involved.

--from host (the default) gathers the files of those packages, and of all they
depend on, from this Debian host's own installation (scripts/setup.sh installs
them): nothing is downloaded, and programs run the same interpreters and
libraries as on the linux runtime. --from debootstrap makes a Debian root with
debootstrap (minbase) at --rootfs, unless one is there already, and imports it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			out := cmd.ErrOrStderr()
			start := time.Now()
			switch from {
			case "host":
				fmt.Fprintf(out, "importing the host's packages as %s ...\n", tag)
				id, hr, err := docker.ImportHost(ctx, host, nil, tag)
				if err != nil {
					return setupError{err}
				}
				fmt.Fprintf(out, "%d packages, %d files and directories, in %.1fs\n", len(hr.Packages), len(hr.Paths), time.Since(start).Seconds())
				fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", tag, id)
				return nil
			case "debootstrap":
			default:
				return usageError{fmt.Errorf("--from %q: want host or debootstrap", from)}
			}
			if rebuild {
				if err := os.RemoveAll(rootfs); err != nil {
					return err
				}
			}
			if _, err := os.Stat(rootfs); os.IsNotExist(err) {
				fmt.Fprintf(out, "debootstrap %s into %s (a few minutes) ...\n", suite, rootfs)
				if err := docker.Debootstrap(ctx, rootfs, suite, mirror, out); err != nil {
					return setupError{err}
				}
			}
			fmt.Fprintf(out, "importing %s as %s ...\n", rootfs, tag)
			id, err := docker.Import(ctx, host, rootfs, tag)
			if err != nil {
				return setupError{err}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", tag, id)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&from, "from", "host", "where the image's files come from: host (this Debian host's packages) or debootstrap")
	f.StringVar(&rootfs, "rootfs", "/var/cache/coderun/docker-rootfs", "--from debootstrap: the Debian root to import (made with debootstrap if absent)")
	f.StringVar(&tag, "tag", docker.DefaultImage, "the image's tag")
	f.StringVar(&host, "docker-host", "", "the Docker Engine's address (default: DOCKER_HOST's)")
	f.StringVar(&suite, "suite", "bookworm", "--from debootstrap: the Debian release debootstrap installs")
	f.StringVar(&mirror, "mirror", "http://deb.debian.org/debian", "--from debootstrap: the Debian mirror debootstrap installs from")
	f.BoolVar(&rebuild, "rebuild", false, "--from debootstrap: make the root anew even if --rootfs exists")
	return cmd
}
