// Package e2b serves E2B's protocols on top of coderun's sessions, so that
// code written for E2B (the @e2b/code-interpreter and e2b SDKs, and tools
// built on them) runs unchanged against a self-hosted coderun.
//
// Three surfaces are served, as E2B's own services answer them:
//
//   - the control plane (E2B_API_URL): create, connect, list, get, kill a
//     sandbox and set its timeout (/v2/sandboxes, /sandboxes/{id});
//   - the code interpreter (E2B's port 49999): POST /execute streaming
//     NDJSON events, /contexts, /health;
//   - envd (E2B's port 49983): GET and POST /files, and the Connect-RPC
//     services filesystem.Filesystem and process.Process (JSON codec).
//
// On one listener the interpreter and envd are told apart by the
// E2b-Sandbox-Port header the SDK sends (49999 or 49983), and sandboxes by
// E2b-Sandbox-Id. For the SDK's debug mode (E2B_DEBUG=true), which talks to
// localhost:49999 and localhost:49983, Service.Interpreter and Service.Envd
// are the handlers of two extra listeners.
//
// # What an E2B sandbox is here
//
// An E2B sandbox is one coderun sandbox (sandbox.Sandbox, made with the
// session manager's runtime, in the tenant of the API key that created
// it) whose workspace is the sandbox's one file system: /work inside it,
// and /home/user, E2B's home and working directory, a link to it there.
// Paths are reported under /home/user, and both names are accepted in
// every path the SDK sends. Everything of the sandbox runs in it side by side
// (sandbox.SideBySide), each program in a box of its own over that
// workspace: its contexts, each a coderun session (Python or bash; the
// default Python context is the sandbox's own and ends it when it ends),
// its commands, each a program of its own (bash exec'ing the command,
// its output streamed, its input, signals and end passed on; it runs on
// when the call that started it goes away, and anyone may connect to it),
// and envd.py, a small program that does the file operations the host
// cannot do from outside (list with metadata, stat, make a directory,
// move, remove, the snapshots a directory watch compares). A file written
// by code in any context is there for every other context, command and
// files.* call. The limits of the sandbox (memory, processes, open files)
// bound each of these programs on its own, not all of them together; the
// workspace's size is shared. A context's helper cells (an execution's
// env_vars, a context's cwd) are in its session's history like any other;
// the execution count E2B reports counts only the code E2B ran.
//
// # Authentication
//
// The control plane takes E2B's API key (X-API-Key, or a bearer token) and
// maps it with the server's Keys onto a tenant. A sandbox created through
// it gets an envd access token, which the SDK sends (X-Access-Token) on
// every envd and interpreter request, and which names the sandbox's
// tenant. A request with neither is served as the default tenant only when
// the server runs without keys on loopback (--insecure-local).
package e2b
