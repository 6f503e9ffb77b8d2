//go:build !amd64 || coderun_init

package linux

import "embed"

// No sandbox init program is embedded for this architecture, nor in the
// init program itself: the runtime re-executes its own binary as the init.
var embeddedInit []byte

var embeddedInitSum, embeddedInitSources string

var ownSources embed.FS
