// Package attacks is an end-to-end attack suite against what `coderun
// serve` exposes on the network, played as a remote tenant would play it:
// with a valid API key for one tenant (or none, against the keyless
// loopback mode), reaching for another tenant's sessions, jobs and E2B
// sandboxes, for the host's files through the file APIs, for the
// operator's limits, and for the server itself (bodies, streams, headers,
// a browser's cross-site requests).
//
// The server is the real one, built through the composition root
// (app.Config.NewServer) with two tenants' keys and its debug listeners,
// and spoken to over loopback TCP. The sandbox beneath it has its own
// security suite (sandbox/sandboxtest); this package attacks the surface
// on top of it. Each scenario states its threat in its doc comment and
// stays as a guard once the attack holds. The package has no code besides
// its tests.
package attacks
