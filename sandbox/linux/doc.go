// Package linux is coderun's embedded sandbox runtime: it needs no daemon,
// only a Linux kernel, root, and the binary that imports it.
//
// Each run gets fresh user, PID, network, mount, IPC, UTS, cgroup and time
// namespaces; a minimal root with the system read-only; an unprivileged uid
// with every capability gone, no_new_privs and a seccomp filter; a cgroup
// that caps memory and processes and measures CPU; and a size-capped
// workspace. The files of this package are its security model, one concern
// each, in the spirit of nsjail:
//
//	init.go      the sandbox's PID 1: the order in which everything is set up
//	user.go      the id mapping, the generated /etc/passwd, the clean environment
//	mount.go     the root file system and what of the host is (not) visible
//	systree.go   the read-only overlays of /usr and /etc's directories, made once per runtime
//	net.go       the empty network namespace (loopback only)
//	timens.go    the sandbox's own uptime and boot time (time namespace)
//	caps.go      the capability bounding set
//	seccomp.go   the system-call filter
//	landlock.go  write access by path: only the workspace and /dev's devices
//	cgroup*.go   memory, pids and CPU: v1 and v2 drivers
//	workspace.go the sandbox's writable storage: one size-capped tmpfs
//	run.go       limits, output capture, termination reasons, usage
//	box.go       one sandbox's lifecycle on the host: create, run, kill, destroy
//	pool.go      pre-started sandboxes, each used once
//	zygote.go    (with zygote.py) Python sandboxes built around forks of one interpreter
//	interactive.go long-lived sandboxes whose programs the caller talks to
//	probe.go     what this host provides ("coderun doctor")
//	initbin.go   the small program started as init (cmd/coderun-sandbox-init, embedded)
//
// Sandboxes built by the zygote (Options.Zygote) are forks of one
// interpreter, and share what a fork cannot change: the address-space layout
// (ASLR), the stack canary seeded from AT_RANDOM, and Python's string-hash
// secret, which every string and dictionary the zygote built depends on:
// a fork that re-keys it can no longer look up a name or key built at run
// time in a dictionary made before the fork (import json fails), and those
// strings and dictionaries cannot be found to rehash (plain ones are not
// tracked by the garbage collector). Every run of one zygote shares these,
// whoever asked for it: a runtime shared by tenants shares them between
// tenants. (The random module re-seeds itself in every fork.) A caller that needs
// them fresh for every run leaves Options.Zygote false, or sets a PYTHON*
// variable (PYTHONHASHSEED=random) in the request's environment, which
// sends that request to a fresh interpreter in a sandbox of its own.
//
// The sandbox's init is this package's code in a program of its own,
// cmd/coderun-sandbox-init, which the package embeds (initbin.go, rebuilt
// by `go generate ./sandbox/linux`); where none is embedded, or it was
// built from other sources than the package's, a binary importing this
// package re-executes itself as the init instead. Either way the
// package's init function takes over in that process, before main runs,
// and the same code sets the sandbox up in the same order.
//
// Speed. Where a run's time goes depends on the host as much as on the
// code, and most on what a page fault, a fork and a cross-CPU TLB
// shootdown cost there: in a paravirtualized guest (PVM, as on coderun's
// development machines, see `coderun bench sandbox`'s host line) they go
// through the hypervisor and cost several times what they cost on bare
// metal or under hardware virtualization. So the design avoids work per
// run that touches many pages: the zygote forks one warm interpreter
// (gc.freeze() first, so the forks' collections leave its pages shared)
// instead of starting one; the init is a 3.4 MB static program rather than
// the embedding binary (a 75 MB CLI pages in some 700 pages and runs the
// initialisers of every package it links before the init's first line);
// the program is moved into its cgroup while its interpreter starts, off
// the path to its first line (a v1 cgroup migration waits for an RCU grace
// period); a pool builds sandboxes ahead, at a lower priority. What stays
// per run: the namespaces (a network namespace costs about 0.8 ms with its
// teardown), the workspace and /proc mounts, the program's own fork, exec
// or copy-on-write faults, and its exit, whose teardown of its address
// space is the largest kernel item in a profile.
package linux
