package docker

import (
	"context"
	"fmt"
	"time"

	"github.com/coderun/coderun/sandbox"
)

// Settings are the docker runtime's settings as a configuration names them
// (runtime.docker.* in coderun's configuration file).
type Settings struct {
	// Host is the Docker Engine's address; empty means DOCKER_HOST's.
	Host string `config:"host"`
	// Image is the image programs run in; empty means DefaultImage.
	Image string `config:"image"`
	// OCIRuntime is the engine's OCI runtime (runc, runsc); empty means its default.
	OCIRuntime string `config:"oci_runtime"`
	// StateDir holds the workspaces' mounts; empty means /run/coderun/docker.
	StateDir string `config:"state_dir"`
	// Pool is the number of started containers kept ready for one-shot runs.
	Pool int `config:"pool"`
}

// Options turns the settings into the runtime's Options.
func (s Settings) Options() Options {
	return Options{Host: s.Host, Image: s.Image, OCIRuntime: s.OCIRuntime, StateDir: s.StateDir, Pool: s.Pool}
}

// Version reports the Docker Engine's version and API version at host
// (empty: DOCKER_HOST's), for a health check.
func Version(ctx context.Context, host string) (string, error) {
	cli, err := newClient(host)
	if err != nil {
		return "", err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	v, err := cli.ServerVersion(ctx)
	if err != nil {
		return "", fmt.Errorf("docker: the Docker Engine does not answer: %w", err)
	}
	return fmt.Sprintf("Docker Engine %s (API %s)", v.Version, v.APIVersion), nil
}

func init() {
	sandbox.Register(Name, sandbox.Driver{
		Options: func() any { return &Settings{} },
		Open: func(options any) (sandbox.Runtime, error) {
			s, ok := options.(*Settings)
			if !ok {
				return nil, fmt.Errorf("docker runtime: options are %T, want *docker.Settings", options)
			}
			return New(s.Options())
		},
	})
}
