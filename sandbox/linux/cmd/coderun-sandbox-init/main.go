// Command coderun-sandbox-init is the linux runtime's sandbox init as a
// program of its own: the package's init code (init.go and the files it
// uses) and nothing else, so that starting it costs a fraction of
// re-executing the whole binary that embeds the runtime (a 75 MB CLI pages
// in, and initialises every package it links, before its init runs).
//
// `go generate ./sandbox/linux` builds it into initbin/, from where the
// runtime embeds it (initbin.go). The runtime starts it exactly as it
// would re-execute itself: the package's init function sees the marker in
// the environment and runs the sandbox's init before main.
package main

import (
	"fmt"
	"os"

	_ "github.com/coderun/coderun/sandbox/linux"
)

func main() {
	fmt.Fprintln(os.Stderr, "coderun-sandbox-init: the linux sandbox runtime starts this program; it does nothing on its own")
	os.Exit(2)
}
