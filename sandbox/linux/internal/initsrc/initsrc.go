// Package initsrc names what the sandbox init program
// (sandbox/linux/cmd/coderun-sandbox-init) is built from, so that the
// runtime can tell whether the copy it embeds was built from the sources
// it was compiled from itself.
package initsrc

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"sort"
	"strings"
)

// Main is the init program's import path.
const Main = "github.com/coderun/coderun/sandbox/linux/cmd/coderun-sandbox-init"

// BuildTag is the tag the init program is built with: it leaves the
// embedded copy of the init program (and of the package's sources) out of
// the init program itself.
const BuildTag = "coderun_init"

// Digest returns a digest of the sandbox/linux package's sources in fsys
// (its directory): every .go file but tests, and every .py file, by name
// and content. The init code is all in that package; a change to any of
// its files counts as a change to the init program.
func Digest(fsys fs.FS) (string, error) {
	var names []string
	for _, pattern := range []string{"*.go", "*.py"} {
		m, err := fs.Glob(fsys, pattern)
		if err != nil {
			return "", err
		}
		for _, n := range m {
			if !strings.HasSuffix(n, "_test.go") {
				names = append(names, n)
			}
		}
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		data, err := fs.ReadFile(fsys, n)
		if err != nil {
			return "", err
		}
		sum := sha256.Sum256(data)
		io.WriteString(h, n+" "+hex.EncodeToString(sum[:])+"\n")
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
