package main

import (
	"fmt"
	"os"

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
	var rootfs, tag, host, suite, mirror string
	var rebuild bool
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Build the docker runtime's image from a debootstrap root, without a registry",
		Long: `Build the image the docker runtime runs programs in: Python 3 with numpy, pandas,
matplotlib and IPython (Debian's packages). A Debian root is made with
debootstrap (minbase) at --rootfs, unless one is there already, and imported
into the Docker Engine as --tag through its API. No registry is involved.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			out := cmd.ErrOrStderr()
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
	f.StringVar(&rootfs, "rootfs", "/var/cache/coderun/docker-rootfs", "the Debian root to import (made with debootstrap if absent)")
	f.StringVar(&tag, "tag", docker.DefaultImage, "the image's tag")
	f.StringVar(&host, "docker-host", "", "the Docker Engine's address (default: DOCKER_HOST's)")
	f.StringVar(&suite, "suite", "bookworm", "the Debian release debootstrap installs")
	f.StringVar(&mirror, "mirror", "http://deb.debian.org/debian", "the Debian mirror debootstrap installs from")
	f.BoolVar(&rebuild, "rebuild", false, "make the root anew even if --rootfs exists")
	return cmd
}
