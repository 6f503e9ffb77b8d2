//go:build amd64 && !coderun_init

package linux

import "embed"

// The sandbox init program for this architecture (see initbin.go), with
// the SHA-256 of its bytes and the digest of the sources it was built from
// (internal/initsrc); and the sources this package is compiled from, for
// the same digest.
var (
	//go:embed *.go *.py
	ownSources embed.FS

	//go:embed initbin/coderun-sandbox-init.linux-amd64
	embeddedInit []byte
	//go:embed initbin/coderun-sandbox-init.linux-amd64.sha256
	embeddedInitSum string
	//go:embed initbin/coderun-sandbox-init.linux-amd64.sources
	embeddedInitSources string
)
