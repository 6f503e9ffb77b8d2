package e2b

import (
	"fmt"
	"path"
	"strings"
)

// Workdir is E2B's default user's home, the directory E2B code names its
// files in and the one E2B paths are reported in: in coderun's sandboxes a
// link to the workspace (/work, also accepted).
const Workdir = "/home/user"

// workspaceDir is where the workspace is mounted in the sandbox.
const workspaceDir = "/work"

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
		case clean == Workdir || clean == workspaceDir:
			return "", nil
		case strings.HasPrefix(clean, Workdir+"/"):
			clean = strings.TrimPrefix(clean, Workdir+"/")
		case strings.HasPrefix(clean, workspaceDir+"/"):
			clean = strings.TrimPrefix(clean, workspaceDir+"/")
		default:
			return "", fmt.Errorf("path %q is outside the sandbox's workspace (%s, also named %s)", p, Workdir, workspaceDir)
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
