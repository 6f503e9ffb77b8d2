package policy

import (
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// defaultWorkspace is where model-written code may touch files: the first
// directory is the working directory relative paths start from.
var defaultWorkspace = []string{"/work", "/tmp"}

// systemDirs are top-level directories whose loss or change breaks the system.
var systemDirs = map[string]bool{
	"bin": true, "boot": true, "dev": true, "etc": true, "home": true, "lib": true,
	"lib32": true, "lib64": true, "libx32": true, "opt": true, "proc": true, "root": true,
	"run": true, "sbin": true, "srv": true, "sys": true, "usr": true, "var": true,
	"mnt": true, "media": true, "snap": true,
}

// sensitiveDirs hold configuration, secrets, kernel interfaces and devices.
var sensitiveDirs = []string{"/etc", "/proc", "/sys", "/dev", "/boot", "/root", "/home", "/run", "/var/run"}

// harmlessDevices are device paths ordinary programs use.
var harmlessDevices = map[string]bool{
	"/dev/null": true, "/dev/zero": true, "/dev/full": true, "/dev/random": true,
	"/dev/urandom": true, "/dev/stdin": true, "/dev/stdout": true, "/dev/stderr": true,
	"/dev/tty": true, "/dev/fd": true, "/dev/shm": true,
}

// diskDevice matches block devices and raw memory: writing to them destroys data.
var diskDevice = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^/dev/(sd[a-z]+[0-9]*|hd[a-z]+[0-9]*|vd[a-z]+[0-9]*|xvd[a-z]+[0-9]*|nvme[0-9]+n[0-9]+(p[0-9]+)?|mmcblk[0-9]+(p[0-9]+)?|dm-[0-9]+|md[0-9]+|loop[0-9]+|sr[0-9]+|disk/.+|mapper/.+|mem|kmem|port)$`)
})

// pathCheck is how a path was used, which decides how much of it to report.
type pathCheck struct {
	// fileAPI is true when the path is certainly used as a file path (open,
	// shutil, a shell command argument). When false (any other Python call),
	// only sensitive locations are reported.
	fileAPI bool
}

// pathVerdict is the outcome of classifying one path.
type pathVerdict struct {
	rule     string // "" when the path is fine
	resolved string // the absolute path it resolves to, when known
	message  string
}

// workspace knows which paths code may touch.
type workspace struct {
	roots []string // cleaned absolute paths; roots[0] is the working directory
}

func newWorkspace(roots []string) workspace {
	if len(roots) == 0 {
		roots = defaultWorkspace
	}
	w := workspace{}
	for _, r := range roots {
		w.roots = append(w.roots, path.Clean("/"+r))
	}
	return w
}

// inside reports whether the absolute path p is inside the workspace.
func (w workspace) inside(p string) bool {
	for _, r := range w.roots {
		if p == r || strings.HasPrefix(p, r+"/") || r == "/" {
			return true
		}
	}
	return false
}

// resolve turns p into a clean absolute path, relative to cwd (absolute) or
// the workspace's working directory when cwd is "". Paths starting with ~
// are returned as they are.
func (w workspace) resolve(p, cwd string) string {
	if strings.HasPrefix(p, "~") {
		return p
	}
	if !strings.HasPrefix(p, "/") {
		if cwd == "" {
			cwd = w.roots[0]
		}
		p = cwd + "/" + p
	}
	return path.Clean(p)
}

// staticPrefix cuts a partly known path to its leading complete components:
// "/etc/${X}.conf" becomes "/etc/"; "data_${X}" becomes "".
func staticPrefix(p string, cut int) string {
	if cut < 0 || cut >= len(p) {
		return p
	}
	p = p[:cut]
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i+1]
	}
	return ""
}

func underAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// classify decides whether a path is a finding. p is the path as written,
// exact says whether all of it is known; if not, unknown is the byte index
// where the unknown part starts. cwd is the absolute working directory, or
// "" for the workspace's.
func (w workspace) classify(p string, exact bool, unknown int, cwd string, how pathCheck) pathVerdict {
	if !exact {
		p = staticPrefix(p, unknown)
		if p == "" || p == "/" {
			return pathVerdict{} // nothing certain to say
		}
	}
	if p == "" {
		return pathVerdict{}
	}
	if strings.HasPrefix(p, "~") {
		if !how.fileAPI && !strings.HasPrefix(p, "~/") {
			return pathVerdict{}
		}
		if p == "~" && !exact {
			return pathVerdict{}
		}
		return pathVerdict{rule: RuleSystemPath, resolved: p, message: "refers to the home directory (" + p + "), outside the workspace"}
	}
	abs := w.resolve(p, cwd)
	if w.inside(abs) || harmlessDevices[abs] || strings.HasPrefix(abs, "/dev/fd/") || strings.HasPrefix(abs, "/dev/shm/") {
		return pathVerdict{}
	}
	shown := p
	if !exact {
		shown += "…"
	}
	if abs != p && abs != strings.TrimSuffix(p, "/") {
		shown += " (" + abs + ")"
	}
	if underAny(abs, sensitiveDirs) {
		if !how.fileAPI && slices.Contains(sensitiveDirs, abs) {
			return pathVerdict{} // a bare "/root" in any call is too weak a sign
		}
		return pathVerdict{rule: RuleSystemPath, resolved: abs, message: "touches the system path " + shown + ", outside the workspace"}
	}
	if !how.fileAPI {
		return pathVerdict{}
	}
	if !strings.HasPrefix(p, "/") {
		return pathVerdict{rule: RuleOutsideWorkspace, resolved: abs, message: "the path " + shown + " leaves the workspace"}
	}
	return pathVerdict{rule: RuleOutsideWorkspace, resolved: abs, message: "touches " + shown + ", outside the workspace (" + strings.Join(w.roots, ", ") + ")"}
}

// rootish reports whether removing or re-permissioning abs recursively would
// wreck the system: "/", a top-level system directory, or a home directory.
// A trailing "/*" or "/.*" glob counts as the directory itself.
func rootish(abs string) bool {
	for _, g := range []string{"/*", "/.*", "/.[!.]*"} {
		if strings.HasSuffix(abs, g) {
			abs = strings.TrimSuffix(abs, g)
			if abs == "" {
				abs = "/"
			}
		}
	}
	if abs == "~" || abs == "~/" || strings.HasPrefix(abs, "~") && !strings.Contains(strings.TrimSuffix(abs, "/"), "/") {
		return true // ~ or ~user
	}
	abs = path.Clean(abs)
	if abs == "/" || abs == "/*" {
		return true
	}
	if strings.Count(abs, "/") == 1 && systemDirs[abs[1:]] {
		return true
	}
	if strings.Count(abs, "/") == 2 && (strings.HasPrefix(abs, "/home/") || strings.HasPrefix(abs, "/usr/")) {
		return true
	}
	return false
}
