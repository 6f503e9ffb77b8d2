package e2b

import (
	"fmt"
	"path"
	"strings"
)

// Workdir is where the sandbox's workspace is seen from inside it, and so
// the directory E2B paths are reported in.
const Workdir = "/work"

// e2bHome is E2B's default user's home, the directory E2B code names its
// files in; it is taken as another name for the workspace.
const e2bHome = "/home/user"

// workspacePath maps a path as E2B code gives it (absolute under
// /home/user or /work, or relative to the user's home) to a path relative
// to the workspace ("" for the workspace itself). Paths outside the
// workspace and paths through ".." out of it are refused.
func workspacePath(p string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("empty path")
	}
	if strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("path %q contains a NUL byte", p)
	}
	clean := p
	if strings.HasPrefix(p, "/") {
		clean = path.Clean(p)
		switch {
		case clean == e2bHome || clean == Workdir:
			return "", nil
		case strings.HasPrefix(clean, e2bHome+"/"):
			clean = strings.TrimPrefix(clean, e2bHome+"/")
		case strings.HasPrefix(clean, Workdir+"/"):
			clean = strings.TrimPrefix(clean, Workdir+"/")
		default:
			return "", fmt.Errorf("path %q is outside the sandbox's workspace (%s, also named %s)", p, Workdir, e2bHome)
		}
	} else {
		for _, part := range strings.Split(p, "/") {
			if part == ".." {
				return "", fmt.Errorf("path %q leaves the workspace", p)
			}
		}
		clean = path.Clean(p)
		if clean == "." {
			return "", nil
		}
	}
	return clean, nil
}

// sandboxPath is the absolute path, as seen inside the sandbox, of a path
// relative to the workspace.
func sandboxPath(rel string) string {
	if rel == "" {
		return Workdir
	}
	return Workdir + "/" + rel
}
