package agent

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/session"
	"github.com/coderun/coderun/store"
)

// workspaceRestorer is an executor whose workspace can be set to given
// entries: how a resumed session, rebuilt by replaying its cells, gets
// back the files of its checkpoint.
type workspaceRestorer interface {
	// restoreWorkspace makes the workspace hold exactly want: what is not
	// in it is removed, its directories, links and complete files are
	// written with their modes. Entries it cannot write (a file whose
	// content was kept only in part, a FIFO) are left as they are and
	// counted in kept.
	restoreWorkspace(ctx context.Context, want []store.File) (kept int, err error)
}

// restorePlan is what the restore cell does, in order: remove paths,
// make directories, make links, set the directories' modes.
type restorePlan struct {
	Remove []string        `json:"remove"`
	Dirs   []restoreDir    `json:"dirs"`
	Links  []restoreLinkTo `json:"links"`
}

type restoreDir struct {
	Path string `json:"path"`
	Mode uint32 `json:"mode"`
}

type restoreLinkTo struct {
	Path   string `json:"path"`
	Target string `json:"target"`
}

func (p restorePlan) empty() bool {
	return len(p.Remove) == 0 && len(p.Dirs) == 0 && len(p.Links) == 0
}

// restoreScript carries out a restorePlan (the global spec) inside the
// sandbox, relative to the workspace whatever the interpreter's working
// directory. It runs in a namespace of its own: the session's variables
// are not touched.
const restoreScript = `import os, shutil
root = %q
def at(p):
    return os.path.join(root, p)
for p in spec["remove"] or []:
    f = at(p)
    if os.path.isdir(f) and not os.path.islink(f):
        shutil.rmtree(f)
    elif os.path.lexists(f):
        os.remove(f)
for d in spec["dirs"] or []:
    os.makedirs(at(d["path"]), exist_ok=True)
for l in spec["links"] or []:
    os.makedirs(os.path.dirname(at(l["path"])), exist_ok=True)
    os.symlink(l["target"], at(l["path"]))
for d in reversed(spec["dirs"] or []):
    os.chmod(at(d["path"]), d["mode"])
`

// restoreWorkspace sets the session's workspace to want (see
// workspaceRestorer). Removals, directories and links are made by one
// cell run in a namespace of its own (the sandbox offers no other way to
// remove a file); complete files are then uploaded with their modes.
// What the executor has seen is taken again from the result, so the next
// cell reports its changes against the restored workspace.
func (e *sessionExecutor) restoreWorkspace(ctx context.Context, want []store.File) (int, error) {
	cur, _, err := e.s.Files()
	if err != nil {
		return 0, fmt.Errorf("agent: restore the workspace: %w", err)
	}
	wanted := make(map[string]store.File, len(want))
	for _, f := range want {
		wanted[f.Path] = f
	}
	current := make(map[string]sandbox.FileInfo, len(cur))
	var plan restorePlan
	removing := func(p string) bool {
		for _, r := range plan.Remove {
			if p == r || strings.HasPrefix(p, r+"/") {
				return true
			}
		}
		return false
	}
	for _, fi := range cur { // in path order: a directory before what it holds
		current[fi.Path] = fi
		w, ok := wanted[fi.Path]
		if removing(fi.Path) || (ok && (w.Kind == string(fi.Kind) || !restorable(w))) {
			continue
		}
		plan.Remove = append(plan.Remove, fi.Path)
	}
	kept := 0
	var files []store.File
	for _, w := range want {
		if !restorable(w) {
			kept++
			continue
		}
		fi, exists := current[w.Path]
		exists = exists && !removing(w.Path)
		switch sandbox.FileKind(w.Kind) {
		case sandbox.KindDir:
			if !exists || fi.Mode.Perm() != w.Mode.Perm() {
				plan.Dirs = append(plan.Dirs, restoreDir{Path: w.Path, Mode: uint32(w.Mode.Perm())})
			}
		case sandbox.KindSymlink:
			if exists && fi.LinkTarget != w.LinkTarget {
				plan.Remove = append(plan.Remove, w.Path)
				exists = false
			}
			if !exists {
				plan.Links = append(plan.Links, restoreLinkTo{Path: w.Path, Target: w.LinkTarget})
			}
		default:
			files = append(files, w)
		}
	}
	if !plan.empty() {
		if err := e.runRestore(ctx, plan); err != nil {
			return 0, err
		}
	}
	for _, f := range files {
		mode := f.Mode.Perm()
		if mode == 0 {
			mode = 0o644
		}
		if err := e.s.Upload(f.Path, f.Content, mode); err != nil {
			return 0, fmt.Errorf("agent: restore the workspace: %w", err)
		}
	}
	if err := e.collect(&Execution{}); err != nil {
		return 0, fmt.Errorf("agent: restore the workspace: %w", err)
	}
	return kept, nil
}

// restorable reports whether an entry can be written from its record: a
// directory, a link, or a regular file whose whole content was kept.
func restorable(f store.File) bool {
	switch sandbox.FileKind(f.Kind) {
	case sandbox.KindDir, sandbox.KindSymlink:
		return true
	case sandbox.KindFile, "":
		return !f.Truncated
	}
	return false
}

// runRestore runs the cell that carries out plan.
func (e *sessionExecutor) runRestore(ctx context.Context, plan restorePlan) error {
	spec, err := json.Marshal(plan)
	if err != nil {
		return fmt.Errorf("agent: restore the workspace: %w", err)
	}
	script := fmt.Sprintf(restoreScript, sandbox.WorkDir)
	b64 := base64.StdEncoding.EncodeToString
	code := fmt.Sprintf("exec(__import__('base64').b64decode('%s').decode(), {'spec': __import__('json').loads(__import__('base64').b64decode('%s'))})",
		b64([]byte(script)), b64(spec))
	c, err := e.s.Execute(ctx, session.Exec{Code: code})
	if err != nil {
		return fmt.Errorf("agent: restore the workspace: %w", err)
	}
	if c.Status != session.StatusOK {
		msg := string(c.Status)
		for _, o := range c.Outputs {
			if o.Type == "error" {
				msg = o.Ename + ": " + o.Evalue
			}
		}
		return fmt.Errorf("agent: restore the workspace: the restoring cell failed: %s", msg)
	}
	return nil
}
