package linux

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// What a coderun process leaves behind when it is killed with SIGKILL (it
// cannot clean up): its group under a "coderun" cgroup parent, with a
// group per sandbox below it; its state directory under StateDir, with the
// workspaces it had mounted there. A runtime reclaims, as it starts, what
// dead processes left under its own "coderun" parent and StateDir (see
// sweepStale and cleanStale). Leftovers lists them on the whole host
// (another session's cgroup, say, which no later runtime started from here
// would look at), and CleanLeftovers removes them, with the same rules:
// nothing of a live process is ever touched.

// Leftover is one thing a coderun process that no longer exists left behind.
type Leftover struct {
	// Kind is "cgroup" (a dead runtime's group, with its sandboxes'),
	// "flat_cgroup" (a sandbox's group of an older coderun, which put them
	// directly under the "coderun" parent), "state_dir" (a dead runtime's
	// directory under StateDir) or "mount" (a mount left in one).
	Kind string `json:"kind"`
	// Path is the directory, or the mount point.
	Path string `json:"path"`
	// Owner is the pid of the dead process, when known.
	Owner int `json:"owner,omitempty"`
}

// Leftovers lists what coderun processes that no longer exist left behind:
// their groups under every "coderun" cgroup parent on the host, and their
// directories and mounts under stateDir ("" for /run/coderun).
func Leftovers(stateDir string) ([]Leftover, error) {
	var out []Leftover
	parents, err := coderunParents()
	for _, p := range parents {
		for _, g := range staleGroups(p) {
			kind := "cgroup"
			if g.flat {
				kind = "flat_cgroup"
			}
			out = append(out, Leftover{Kind: kind, Path: g.dir, Owner: g.owner})
		}
	}
	if stateDir == "" {
		stateDir = defaultStateDir
	}
	for _, dir := range staleStateDirs(stateDir) {
		pid, _ := strconv.Atoi(strings.SplitN(filepath.Base(dir), "-", 2)[0])
		for _, m := range mountsUnder(dir) {
			out = append(out, Leftover{Kind: "mount", Path: m, Owner: pid})
		}
		out = append(out, Leftover{Kind: "state_dir", Path: dir, Owner: pid})
	}
	return out, err
}

// CleanLeftovers removes what Leftovers lists: a dead runtime's groups are
// emptied of any process left in them and removed, a flat-layout group is
// removed if it is empty, a state directory is unmounted and removed. It
// returns what it removed and an error naming each thing it could not.
func CleanLeftovers(stateDir string) ([]Leftover, error) {
	found, err := Leftovers(stateDir)
	errs := []error{err}
	kill := killProcs
	if _, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers")); err == nil {
		kill = killGroup
	}
	var removed []Leftover
	for _, l := range found {
		var err error
		switch l.Kind {
		case "cgroup", "flat_cgroup":
			err = staleGroup{dir: l.Path, owner: l.Owner, flat: l.Kind == "flat_cgroup"}.remove(kill)
		case "state_dir":
			err = removeStateDir(l.Path)
		case "mount":
			continue // unmounted with its state directory
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", l.Kind, l.Path, err))
			continue
		}
		removed = append(removed, l)
		if l.Kind == "state_dir" {
			for _, m := range found {
				if m.Kind == "mount" && strings.HasPrefix(m.Path, l.Path+"/") {
					removed = append(removed, m)
				}
			}
		}
	}
	return removed, errors.Join(errs...)
}

// defaultStateDir is Options.StateDir's default.
const defaultStateDir = "/run/coderun"

// coderunParents finds every "coderun" group parent on the host: in the
// unified hierarchy, or in each v1 controller coderun uses.
func coderunParents() ([]string, error) {
	roots := []string{cgroupRoot}
	if _, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers")); err != nil {
		roots = roots[:0]
		for _, c := range v1Controllers {
			roots = append(roots, filepath.Join(cgroupRoot, c))
		}
	}
	var out []string
	var errs []error
	for _, root := range roots {
		if _, err := os.Stat(root); err != nil {
			continue
		}
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil // a group removed while we looked
				}
				return err
			}
			if !d.IsDir() {
				return nil
			}
			if d.Name() == "coderun" && path != root {
				out = append(out, path)
				return fs.SkipDir // what is below belongs to it: staleGroups looks
			}
			return nil
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("look for coderun's groups in %s: %w", root, err))
		}
	}
	return out, errors.Join(errs...)
}

// mountsUnder lists the mount points below dir in this process's mount
// table, in the table's order (a mount's parents first).
func mountsUnder(dir string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if strings.HasPrefix(mp, dir+"/") || mp == dir {
			out = append(out, mp)
		}
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
