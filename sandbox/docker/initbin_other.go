//go:build !amd64

package docker

// initProgram is not built for this architecture: containers run without
// the init program's Landlock domain.
var initProgram []byte
