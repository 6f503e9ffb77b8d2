package docker

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The image from the host's own packages. A Debian host that runs coderun
// has the sandbox's Python stack installed already (scripts/setup.sh puts
// it there, and the linux runtime runs it): HostRoot gathers the files of
// those packages and of everything they depend on, as dpkg installed them,
// into a root file system for the image. No package is downloaded, so a
// fresh machine builds the image in the time it takes to read the files,
// and programs run the same Python, numpy and pandas on either runtime.

// HostBase are the packages every image root holds besides ImagePackages:
// the shells, the utilities programs call, and what dpkg and Python look
// up at run time.
var HostBase = []string{
	"base-files", "bash", "dash", "coreutils", "sed", "grep", "mawk", "findutils", "diffutils",
	"gzip", "tar", "procps", "util-linux", "libc-bin", "tzdata", "ca-certificates", "media-types",
}

// HostImagePackages are the packages of an image built from the host:
// ImagePackages and HostBase, without ipykernel (which brings a debugger,
// gdb and Boost; programs and sessions need IPython only) and the virtual
// package's provider only debootstrap needs.
func HostImagePackages() []string {
	var out []string
	for _, p := range ImagePackages {
		if p != "python3-cffi-backend" && p != "python3-ipykernel" {
			out = append(out, p)
		}
	}
	return append(out, HostBase...)
}

// HostExcluded are packages an image built from the host leaves out even
// where a package it holds depends on them, each for its reason.
var HostExcluded = map[string]string{
	"python3-pythran": "scipy's compiler of Python to C++, needed to build scipy, not to run it; it brings g++ and Boost's headers (half the image)",
}

// dpkgPackage is an installed package as dpkg's status file describes it.
type dpkgPackage struct {
	name, arch string
	depends    [][]string // groups of alternatives (Pre-Depends and Depends)
	provides   []string
}

// dpkgDB is what dpkg knows of the host's installed packages.
type dpkgDB struct {
	admin    string // /var/lib/dpkg
	native   string // dpkg's architecture
	packages map[string]*dpkgPackage
	provided map[string][]string // virtual package -> installed providers
}

// readDpkg reads the status file under admin (normally /var/lib/dpkg),
// keeping the packages installed for native or for every architecture.
func readDpkg(admin, native string) (*dpkgDB, error) {
	data, err := os.ReadFile(filepath.Join(admin, "status"))
	if err != nil {
		return nil, fmt.Errorf("reading dpkg's status: %w", err)
	}
	db := &dpkgDB{admin: admin, native: native, packages: map[string]*dpkgPackage{}, provided: map[string][]string{}}
	for _, stanza := range strings.Split(string(data), "\n\n") {
		f := stanzaFields(stanza)
		if f["Package"] == "" || !strings.HasSuffix(f["Status"], " installed") {
			continue
		}
		if a := f["Architecture"]; a != native && a != "all" {
			continue
		}
		p := &dpkgPackage{name: f["Package"], arch: f["Architecture"]}
		for _, field := range []string{"Pre-Depends", "Depends"} {
			for _, group := range splitList(f[field]) {
				var alts []string
				for _, alt := range strings.Split(group, "|") {
					if n := depName(alt); n != "" {
						alts = append(alts, n)
					}
				}
				if len(alts) > 0 {
					p.depends = append(p.depends, alts)
				}
			}
		}
		for _, v := range splitList(f["Provides"]) {
			if n := depName(v); n != "" {
				p.provides = append(p.provides, n)
				db.provided[n] = append(db.provided[n], p.name)
			}
		}
		db.packages[p.name] = p
	}
	return db, nil
}

// stanzaFields parses one stanza's fields, continuation lines joined.
func stanzaFields(stanza string) map[string]string {
	f := map[string]string{}
	var last string
	for _, line := range strings.Split(stanza, "\n") {
		if line == "" {
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			if last != "" {
				f[last] += " " + strings.TrimSpace(line)
			}
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		last = k
		f[k] = strings.TrimSpace(v)
	}
	return f
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// depName is the package a relation names: "python3:any (>= 3.11~)" is python3.
func depName(rel string) string {
	rel = strings.TrimSpace(rel)
	if i := strings.IndexAny(rel, " (["); i >= 0 {
		rel = rel[:i]
	}
	name, _, _ := strings.Cut(rel, ":")
	return name
}

// satisfy returns the installed package that satisfies one alternative of
// group (the first that is installed, itself or through Provides), or "".
func (db *dpkgDB) satisfy(group []string) string {
	for _, alt := range group {
		if _, ok := db.packages[alt]; ok {
			return alt
		}
		if prov := db.provided[alt]; len(prov) > 0 {
			return prov[0]
		}
	}
	return ""
}

// closure returns roots and every package they depend on, sorted, but
// those exclude names (and what only they depend on). A root that is not
// installed is an error; a dependency no installed package satisfies is
// left out (dpkg let it be so).
func (db *dpkgDB) closure(roots []string, exclude map[string]string) ([]string, error) {
	seen := map[string]bool{}
	var missing []string
	queue := []string{}
	for _, r := range roots {
		if n := db.satisfy([]string{r}); n != "" {
			queue = append(queue, n)
		} else {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("not installed on this host: %s (apt-get install %s)", strings.Join(missing, ", "), strings.Join(missing, " "))
	}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if _, ok := exclude[n]; seen[n] || ok {
			continue
		}
		seen[n] = true
		for _, g := range db.packages[n].depends {
			if d := db.satisfy(g); d != "" && !seen[d] {
				queue = append(queue, d)
			}
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// files returns the paths dpkg installed for package name.
func (db *dpkgDB) files(name string) ([]string, error) {
	p := db.packages[name]
	var data []byte
	var err error
	for _, f := range []string{name + ":" + p.arch + ".list", name + ".list"} {
		if data, err = os.ReadFile(filepath.Join(db.admin, "info", f)); err == nil {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("the files of %s: %w", name, err)
	}
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if l != "" && l != "/." {
			out = append(out, l)
		}
	}
	return out, nil
}

// alternatives returns the links update-alternatives made for the
// alternatives one of whose choices is among have (the image's paths): each
// link (such as /usr/lib/x86_64-linux-gnu/libblas.so.3, and the slaves
// that follow its master) and /etc/alternatives/NAME, which points to the
// choice: the host's own when the image has it, else the image's choice of
// highest priority (the host may have chosen a package the image leaves
// out). It returns link path -> target.
func (db *dpkgDB) alternatives(root string, have map[string]bool) map[string]string {
	out := map[string]string{}
	ents, err := os.ReadDir(filepath.Join(db.admin, "alternatives"))
	if err != nil {
		return out
	}
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(db.admin, "alternatives", e.Name()))
		if err != nil {
			continue
		}
		alt, ok := parseAlternative(e.Name(), string(data))
		if !ok {
			continue
		}
		current, _ := os.Readlink(filepath.Join(root, "/etc/alternatives", e.Name()))
		best := -1
		for i, c := range alt.choices {
			if !have[realPath(root, c.path)] {
				continue
			}
			if c.path == current {
				best = i
				break
			}
			if best < 0 || c.priority > alt.choices[best].priority {
				best = i
			}
		}
		if best < 0 {
			continue
		}
		choice := alt.choices[best]
		for i, l := range alt.links {
			target := choice.path
			if i > 0 {
				target = choice.slaves[i-1]
			}
			if target == "" || !have[realPath(root, target)] {
				continue
			}
			out[l.link] = "/etc/alternatives/" + l.name
			out["/etc/alternatives/"+l.name] = target
		}
	}
	return out
}

// alternative is one file of dpkg's alternatives database.
type alternative struct {
	links   []struct{ name, link string } // the master first, then the slaves
	choices []struct {
		path     string
		priority int
		slaves   []string // each slave's target ("" for none), in links' order
	}
}

// parseAlternative reads the file of the alternative name: its mode, its
// master link, pairs of slave name and link, a blank line, then each
// choice's path, priority and one line per slave.
func parseAlternative(name, data string) (alternative, bool) {
	var a alternative
	lines := strings.Split(data, "\n")
	if len(lines) < 3 {
		return a, false
	}
	a.links = append(a.links, struct{ name, link string }{name, lines[1]})
	i := 2
	for ; i+1 < len(lines) && lines[i] != ""; i += 2 {
		a.links = append(a.links, struct{ name, link string }{lines[i], lines[i+1]})
	}
	i++ // the blank line
	nslaves := len(a.links) - 1
	for i+1+nslaves < len(lines)+1 && i < len(lines) && lines[i] != "" {
		var c struct {
			path     string
			priority int
			slaves   []string
		}
		c.path = lines[i]
		if _, err := fmt.Sscan(lines[i+1], &c.priority); err != nil {
			return a, false
		}
		if i+2+nslaves > len(lines) {
			return a, false
		}
		c.slaves = lines[i+2 : i+2+nslaves]
		a.choices = append(a.choices, c)
		i += 2 + nslaves
	}
	return a, len(a.choices) > 0
}

// realPath resolves the directories of p (absolute, within root) through
// their symbolic links, as the merged /usr has them (/bin is usr/bin): the
// place an image must hold p's entry at. The last element is not resolved.
func realPath(root, p string) string {
	dir, base := filepath.Split(filepath.Clean(p))
	real, err := filepath.EvalSymlinks(filepath.Join(root, dir))
	if err != nil {
		return filepath.Clean(p)
	}
	rel, err := filepath.Rel(root, real)
	if err != nil || strings.HasPrefix(rel, "..") {
		return filepath.Clean(p)
	}
	return filepath.Join("/", rel, base)
}

// HostRoot is the list of host paths an image built from the host holds.
type HostRoot struct {
	Root     string   // the host's root, "/" (another for tests)
	Packages []string // every package included, sorted
	Paths    []string // absolute paths within Root, sorted, parents before children
	// Links are symbolic links the image holds that are not the host's
	// (the alternatives chosen among the image's files): path -> target.
	Links map[string]string
}

// NewHostRoot gathers the files of packages and of everything they depend
// on (but the packages exclude names) from the dpkg database of the system
// at root ("/": the host), with the links update-alternatives made for
// them and the compiled Python files (__pycache__) beside each Python
// source.
func NewHostRoot(root string, packages []string, exclude map[string]string) (*HostRoot, error) {
	native, err := dpkgArch(root)
	if err != nil {
		return nil, err
	}
	db, err := readDpkg(filepath.Join(root, "var/lib/dpkg"), native)
	if err != nil {
		return nil, err
	}
	names, err := db.closure(packages, exclude)
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	add := func(p string) {
		for p != "/" && !have[p] {
			have[p] = true
			p = filepath.Dir(p)
		}
	}
	for _, n := range names {
		files, err := db.files(n)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			fi, err := os.Lstat(filepath.Join(root, f))
			if err != nil {
				continue // excluded when installed (documentation), or removed
			}
			real := realPath(root, f)
			if fi.IsDir() && real != filepath.Clean(f) {
				continue // /bin itself, a link to usr/bin
			}
			add(real)
			if strings.HasSuffix(f, ".py") && fi.Mode().IsRegular() {
				stem := strings.TrimSuffix(filepath.Base(real), ".py")
				pyc, _ := filepath.Glob(filepath.Join(root, filepath.Dir(real), "__pycache__", stem+".*.pyc"))
				for _, c := range pyc {
					add("/" + strings.TrimPrefix(c, filepath.Clean(root)+"/"))
				}
			}
		}
	}
	links := map[string]string{}
	for l, target := range db.alternatives(root, have) {
		l = realPath(root, l)
		links[l] = target
		add(filepath.Dir(l))
	}
	// The merged /usr's links (/bin -> usr/bin) and the loader's cache.
	for _, p := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc/ld.so.cache"} {
		if _, err := os.Lstat(filepath.Join(root, p)); err == nil {
			add(p)
		}
	}
	paths := make([]string, 0, len(have))
	for p := range have {
		paths = append(paths, p)
	}
	sort.Strings(paths) // a parent sorts before its children
	return &HostRoot{Root: root, Packages: names, Paths: paths, Links: links}, nil
}

// dpkgArch is dpkg's native architecture of the system at root.
func dpkgArch(root string) (string, error) {
	data, err := os.ReadFile(filepath.Join(root, "var/lib/dpkg/arch-native"))
	if err == nil {
		if a := strings.TrimSpace(string(data)); a != "" {
			return a, nil
		}
	}
	// dpkg records no architecture file before 1.21; libc6's list names it.
	matches, _ := filepath.Glob(filepath.Join(root, "var/lib/dpkg/info/libc6:*.list"))
	for _, m := range matches {
		return strings.TrimSuffix(strings.TrimPrefix(filepath.Base(m), "libc6:"), ".list"), nil
	}
	if _, err := os.Stat(filepath.Join(root, "var/lib/dpkg/status")); errors.Is(err, fs.ErrNotExist) {
		return "", errors.New("no dpkg database on this host (/var/lib/dpkg): an image is built from the host's packages on Debian and its derivatives only")
	}
	return "", errors.New("cannot tell dpkg's architecture (no /var/lib/dpkg/arch-native, no libc6:ARCH.list)")
}

// imageEtc are the small files of an image's /etc that no package
// installs: the users programs may look up (the runtime's, uid 10001, as
// "sandbox").
var imageEtc = map[string]string{
	"etc/passwd": "root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n" +
		"coderun:x:10000:10000:coderun:/nonexistent:/usr/sbin/nologin\nsandbox:x:10001:10001:sandbox:/tmp:/bin/bash\n",
	"etc/group": "root:x:0:\nnogroup:x:65534:\ncoderun:x:10000:\nsandbox:x:10001:\n",
}
