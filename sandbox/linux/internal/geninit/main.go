// Command geninit builds the sandbox init program
// (cmd/coderun-sandbox-init) into initbin/ for the runtime to embed, with
// the digest of its binary and of the sources it was built from. Run by
// `go generate ./sandbox/linux`, in that directory.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/coderun/coderun/sandbox/linux/internal/initsrc"
)

// arches are those the init program is embedded for; elsewhere the
// runtime re-executes its own binary as the init.
var arches = []string{"amd64"}

func main() {
	for _, arch := range arches {
		if err := generate(arch); err != nil {
			fmt.Fprintf(os.Stderr, "geninit: %s: %v\n", arch, err)
			os.Exit(1)
		}
	}
}

func generate(arch string) error {
	base := filepath.Join("initbin", "coderun-sandbox-init.linux-"+arch)
	sources, err := initsrc.Digest(os.DirFS("."))
	if err != nil {
		return err
	}
	// Static, stripped, and reproducible: no cgo, no paths of this
	// machine, no build id or version-control stamp.
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-tags", initsrc.BuildTag,
		"-ldflags", "-s -w -buildid=", "-o", base, initsrc.Main)
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+arch, "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build: %w", err)
	}
	bin, err := os.ReadFile(base)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(bin)
	if err := os.WriteFile(base+".sha256", []byte(hex.EncodeToString(sum[:])+"\n"), 0o644); err != nil {
		return err
	}
	return os.WriteFile(base+".sources", []byte(sources+"\n"), 0o644)
}
