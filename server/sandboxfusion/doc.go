// Package sandboxfusion serves SandboxFusion's code-running API
// (bytedance/SandboxFusion) from coderun's sandboxes, so that RL
// frameworks that score with SandboxFusion — verl's reward function and its
// code tool — can point at a coderun server unchanged.
//
// Three routes are served, with SandboxFusion's request and response
// schemas and status semantics:
//
//   - POST /run_code runs one program: its files (base64) placed in a
//     fresh workspace, its stdin, run_timeout and memory_limit_MB as the
//     sandbox's wall-time and memory limits; fetch_files come back base64.
//     The answer's status is Success, Failed (a non-zero exit, a time limit,
//     a compile error) or SandboxError (coderun could not run it), always
//     with HTTP 200; compile_result is null for interpreted languages, and
//     stdout and stderr are strings whenever the program ran.
//   - POST /run_jupyter runs cells one after another in one fresh Python
//     session and answers each cell's stdout, stderr, display data and
//     errors.
//   - GET /v1/ping answers "pong".
//
// A request whose body is not SandboxFusion's gets FastAPI's 422 shape
// ({"detail": [{"type", "loc", "msg", "input"}]}), as SandboxFusion's
// server answers; a language of SandboxFusion's list that coderun does not
// run is a SandboxError naming it. The languages and their SandboxFusion
// names come from package language.
//
// Authentication is the surface's own (SandboxFusion's clients send no
// credentials): a key in "Authorization: Bearer", X-API-Key or as the
// password of HTTP Basic authentication (a URL such as
// http://sf:KEY@host:8080/run_code) names its tenant; a request without
// one runs as the operator's keyless tenant when one is configured, and is
// refused otherwise. Runs beyond the surface's capacity wait their turn
// rather than fail: verl sends 64 requests at once by default.
package sandboxfusion
