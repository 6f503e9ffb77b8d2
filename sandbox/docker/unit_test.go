package docker

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/moby/profiles/seccomp"
	"golang.org/x/sys/unix"
)

// The containers' seccomp profile narrows Docker's: no inotify and no
// socketcall, sockets of the unix, inet and inet6 families and netlink's
// route protocol only; io_uring stays refused.
func TestSeccompProfile(t *testing.T) {
	data, err := seccompProfile()
	if err != nil {
		t.Fatal(err)
	}
	var p seccomp.Seccomp
	if err := json.Unmarshal([]byte(data), &p); err != nil {
		t.Fatalf("the profile is not Docker's JSON: %v", err)
	}
	if p.DefaultAction != "SCMP_ACT_ERRNO" {
		t.Errorf("default action %s, want SCMP_ACT_ERRNO (an allow-list)", p.DefaultAction)
	}
	var sockets [][]string
	for _, r := range p.Syscalls {
		for _, n := range r.Names {
			if slices.Contains([]string{"inotify_init", "inotify_init1", "inotify_add_watch", "socketcall",
				"io_uring_setup", "io_uring_enter", "io_uring_register", "fanotify_init"}, n) && r.Action == "SCMP_ACT_ALLOW" && r.Includes == nil {
				t.Errorf("%s is allowed", n)
			}
			if n == "socket" {
				if r.Action != "SCMP_ACT_ALLOW" {
					continue
				}
				var conds []string
				for _, a := range r.Args {
					conds = append(conds, strings.Join([]string{string(rune('0' + a.Index)), string(a.Op), jsonNum(a.Value)}, " "))
				}
				sockets = append(sockets, conds)
			}
		}
	}
	want := [][]string{
		{"0 SCMP_CMP_EQ " + jsonNum(unix.AF_UNIX)}, {"0 SCMP_CMP_EQ " + jsonNum(unix.AF_INET)}, {"0 SCMP_CMP_EQ " + jsonNum(unix.AF_INET6)},
		{"0 SCMP_CMP_EQ " + jsonNum(unix.AF_NETLINK), "2 SCMP_CMP_EQ " + jsonNum(unix.NETLINK_ROUTE)},
	}
	if !slices.EqualFunc(sockets, want, slices.Equal[[]string]) {
		t.Errorf("socket is allowed under %q, want %q", sockets, want)
	}
}

func jsonNum(v uint64) string { b, _ := json.Marshal(v); return string(b) }

// The embedded init program is what `go generate ./sandbox/docker` builds
// from cmd/coderun-docker-init now.
func TestEmbeddedInitIsCurrent(t *testing.T) {
	if len(initProgram) == 0 {
		t.Skipf("no init program is embedded for %s", runtime.GOARCH)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	out := filepath.Join(t.TempDir(), "init")
	cmd := exec.Command(goBin, "build", "-trimpath", "-ldflags", "-s -w -buildid=", "-o", out, "./cmd/coderun-docker-init")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the init program: %v\n%s", err, msg)
	}
	built, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(built, initProgram) {
		t.Fatalf("the embedded init program (sha256 %x) is not what its sources build (%x): run `go generate ./sandbox/docker` and commit initbin/",
			sha256.Sum256(initProgram), sha256.Sum256(built))
	}
}
