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
// An E2B sandbox is one coderun Python session (session.Manager, in the
// tenant of the API key that created it): its workspace is the sandbox's
// file system (/work inside the sandbox; E2B's /home/user is accepted as
// another name for it) and its interpreter is the sandbox's default Python
// context. Every further context (POST /contexts, or a language's default
// context other than Python's) is a session of its own, with its own
// workspace. Commands (process.Process/Start) and the file operations the
// host cannot do from outside (list with modification times, make a
// directory, move, remove) run inside the sandbox, through the default
// context's interpreter, one at a time with its cells: a command started
// while a cell runs waits for it, and a cell waits for a running command.
// Such helper cells are in the session's history like any other; the
// execution count E2B reports counts only the code E2B ran.
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
