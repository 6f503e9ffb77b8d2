//go:build !amd64

package docker

// initProgram is not built for this architecture: the runtime refuses to
// start (its containers' init is this program).
var initProgram []byte
