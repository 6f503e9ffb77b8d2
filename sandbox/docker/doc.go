// Package docker is the sandbox runtime that runs each program in a Docker
// container, through the Docker Engine API (the official Go client; the
// docker CLI is never run).
//
// A one-shot run gets a container of its own: no network, a read-only root,
// every capability dropped, no-new-privileges, a non-root user, pids,
// memory and CPU limits and explicit ulimits. Its workspace is a tmpfs the
// runtime mounts on the host, sized to the request's workspace limit and
// shared by /work, /tmp and /dev/shm (bind-mounted into the container), so
// that files are written in and read out on the trusted side with
// sandbox/hostdir, never following a link. The container's init is the
// runtime's own program (cmd/coderun-docker-init --supervise, pid 1): it
// starts the language's interpreter, whose sandbox/bootstrap bootstrap
// waits for its code, and reports the program's exact wait status. The host
// talks to it through named pipes it opened before the container started
// (pipes.go): the code, stdin, stdout, stderr, "ready" and the status. So a
// container can be started ahead, its interpreter waiting, and kept in a warm
// pool; a run then calls no engine API. The container is killed and
// removed after the run. Containers carry their owner process; a runtime
// removes at its start those whose owner is gone (leftovers.go).
//
// Usage, OOM kills and the final kill of every process are read and done
// through the container's cgroup on the host (cgroup v1 or v2), so a result
// says exactly what happened without asking the daemon.
//
// What the container alone would let through is closed as the linux
// runtime closes it: Docker's seccomp allow-list narrowed (seccomp.go), a
// Landlock domain laid by a small static program every process starts under
// (cmd/coderun-docker-init, embedded and bind-mounted read-only: the OOM
// score the engine sets stays), a boot id of the container's own
// (identity.go), an inode cap on the workspace. Clocks of the container's
// own come from the engine's OCI runtime (scripts/docker-runc.sh). Under
// gVisor's runsc as the engine's OCI runtime (Options.OCIRuntime), one-shot
// runs work with the differences gvisor.go and the README list, and
// long-lived sandboxes are refused.
//
// The image (Python 3 with numpy, pandas, matplotlib and IPython, and
// Node) is built locally, without a registry: by ImportHost from the host's
// own Debian packages (hostroot.go), or by Import from a debootstrap root
// (coderun image build); its tag is configurable.
package docker
