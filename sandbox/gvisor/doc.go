// Package gvisor is the sandbox runtime that puts gVisor's user-space
// kernel between the program and the host: it drives runsc, gVisor's OCI
// runtime, directly on an OCI bundle it writes for every sandbox (no
// container engine in between).
//
// The sandbox sees what the linux runtime's sees, served by the Sentry
// instead of the host's kernel:
//
//	root.go      the read-only root: a small template directory (links,
//	             generated /etc files, mount points) with the host's /usr,
//	             /etc's shared trees and the like bound read-only over it
//	spec.go      the OCI config: no network, no capabilities,
//	             no_new_privs, a non-root user, rlimits, the cgroup
//	workspace.go the writable storage: one size-capped tmpfs on the host
//	             holding work/, tmp/ and shm/, bound at /work, /tmp and
//	             /dev/shm, read and written on the trusted side with
//	             sandbox/hostdir, never following a link
//	cgroup.go    the box's cgroup, made by the runtime above the one runsc
//	             makes: the memory limit, CPU and memory accounting and OOM
//	             kills outlive runsc's own cleanup, and a kill reaches the
//	             Sentry and the gofer alike
//	runsc.go     finding the pinned runsc (scripts/runsc.sh builds it),
//	             its command lines and its record of the exit status
//	run.go       a one-shot run: limits enforced by the host (wall time,
//	             CPU time from the cgroup, output caps), termination
//	             reasons, usage, files out
//	leftovers.go what a killed coderun or runsc leaves behind (runsc
//	             state, mounts, cgroups) and reclaiming it at start
//	interactive.go long-lived sandboxes: one container, a program at a
//	             time started in it with runsc exec
//	readwatch.go which threads of a long-lived sandbox are in read(2),
//	             and on what, as the Sentry reports them (AwaitingInput)
//
// The platform is systrap (runsc's default): coderun's development
// machines are paravirtualized KVM guests without nested virtualization,
// where the kvm platform hangs; ptrace works too (Options.Platform).
package gvisor
