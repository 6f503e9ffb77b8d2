package sandbox

import (
	"fmt"
	"path"
	"strings"
	"time"
	"unicode/utf8"
)

// MaxCodeBytes bounds Request.Code.
const MaxCodeBytes = 1 << 20

// DefaultLimits are used for every zero field of Request.Limits.
var DefaultLimits = Limits{
	WallTime:       30 * time.Second,
	CPUTime:        30 * time.Second,
	Memory:         512 << 20,
	Processes:      64,
	OutputBytes:    1 << 20,
	WorkspaceBytes: 256 << 20,
	OpenFiles:      1024,
}

// DefaultCompileLimits are used for every zero field of
// Request.CompileLimits: a compiler needs more time, memory and threads
// than most programs it makes.
var DefaultCompileLimits = Limits{
	WallTime:       60 * time.Second,
	CPUTime:        60 * time.Second,
	Memory:         2 << 30,
	Processes:      256,
	OutputBytes:    1 << 20,
	WorkspaceBytes: 256 << 20,
	OpenFiles:      1024,
}

// MaxLimits are the largest values a request may ask for.
var MaxLimits = Limits{
	WallTime:       time.Hour,
	CPUTime:        time.Hour,
	Memory:         64 << 30,
	Processes:      4096,
	OutputBytes:    256 << 20,
	WorkspaceBytes: 64 << 30,
	OpenFiles:      65536,
}

// minLimits are the smallest useful values: an interpreter cannot start below them.
var minLimits = Limits{
	WallTime:       time.Millisecond,
	CPUTime:        time.Millisecond,
	Memory:         16 << 20,
	Processes:      1,
	OutputBytes:    1,
	WorkspaceBytes: 1 << 20,
	OpenFiles:      16,
}

// WithDefaults returns l with every zero field set from d.
func (l Limits) WithDefaults(d Limits) Limits {
	if l.WallTime == 0 {
		l.WallTime = d.WallTime
	}
	if l.CPUTime == 0 {
		l.CPUTime = d.CPUTime
	}
	if l.Memory == 0 {
		l.Memory = d.Memory
	}
	if l.Processes == 0 {
		l.Processes = d.Processes
	}
	if l.OutputBytes == 0 {
		l.OutputBytes = d.OutputBytes
	}
	if l.WorkspaceBytes == 0 {
		l.WorkspaceBytes = d.WorkspaceBytes
	}
	if l.OpenFiles == 0 {
		l.OpenFiles = d.OpenFiles
	}
	return l
}

// Validate checks every limit against its allowed range.
func (l Limits) Validate() error {
	check := func(name string, v, lo, hi int64, unit func(int64) string) error {
		if v < lo || v > hi {
			return fmt.Errorf("%w: %s %s is out of range [%s, %s]", ErrInvalid, name, unit(v), unit(lo), unit(hi))
		}
		return nil
	}
	dur := func(v int64) string { return time.Duration(v).String() }
	num := func(v int64) string { return fmt.Sprint(v) }
	for _, c := range []struct {
		name      string
		v, lo, hi int64
		unit      func(int64) string
	}{
		{"wall time", int64(l.WallTime), int64(minLimits.WallTime), int64(MaxLimits.WallTime), dur},
		{"CPU time", int64(l.CPUTime), int64(minLimits.CPUTime), int64(MaxLimits.CPUTime), dur},
		{"memory", l.Memory, minLimits.Memory, MaxLimits.Memory, FormatBytes},
		{"processes", int64(l.Processes), int64(minLimits.Processes), int64(MaxLimits.Processes), num},
		{"output bytes", l.OutputBytes, minLimits.OutputBytes, MaxLimits.OutputBytes, FormatBytes},
		{"workspace bytes", l.WorkspaceBytes, minLimits.WorkspaceBytes, MaxLimits.WorkspaceBytes, FormatBytes},
		{"open files", int64(l.OpenFiles), int64(minLimits.OpenFiles), int64(MaxLimits.OpenFiles), num},
	} {
		if err := check(c.name, c.v, c.lo, c.hi, c.unit); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks a request and fills in default limits. It returns the
// interpreter to use. Nothing is run.
func (r *Request) Validate(defaults Limits) (Interpreter, error) {
	in, err := LookupInterpreter(r.Language)
	if err != nil {
		return in, err
	}
	if len(r.CompileArgs) > 0 {
		return in, fmt.Errorf("%w: %s has no compile step to take compile arguments", ErrInvalid, r.Language)
	}
	if strings.TrimSpace(r.Code) == "" {
		return in, fmt.Errorf("%w: code is empty", ErrInvalid)
	}
	if len(r.Code) > MaxCodeBytes {
		return in, fmt.Errorf("%w: code is %s, more than the %s allowed", ErrInvalid, FormatBytes(int64(len(r.Code))), FormatBytes(MaxCodeBytes))
	}
	if strings.IndexByte(r.Code, 0) >= 0 {
		return in, fmt.Errorf("%w: code contains a NUL byte", ErrInvalid)
	}
	if err := ValidateName(r.Name); err != nil {
		return in, err
	}
	r.Limits = r.Limits.WithDefaults(defaults)
	if err := r.Limits.Validate(); err != nil {
		return in, err
	}
	if err := validateEnv(r.Env); err != nil {
		return in, err
	}
	if err := validateFiles(r.Files, r.Limits.WorkspaceBytes); err != nil {
		return in, err
	}
	if r.FileContents < 0 {
		return in, fmt.Errorf("%w: negative file content size", ErrInvalid)
	}
	return in, nil
}

// Validate checks a long-lived sandbox's spec and fills in default limits.
// WallTime and CPUTime may stay zero, meaning unbounded; set, they must be
// in range like any other limit.
func (s *Spec) Validate(defaults Limits) error {
	wall, cpu := s.Limits.WallTime, s.Limits.CPUTime
	s.Limits = s.Limits.WithDefaults(defaults)
	if err := s.Limits.Validate(); err != nil {
		return err
	}
	s.Limits.WallTime, s.Limits.CPUTime = wall, cpu
	return validateFiles(s.Files, s.Limits.WorkspaceBytes)
}

// ValidateName checks Request.Name: empty, or a plain file name (no
// directory, no control characters, valid UTF-8, at most 255 bytes).
func ValidateName(name string) error {
	if name == "" {
		return nil
	}
	bad := func(why string) error {
		return fmt.Errorf("%w: program name %q %s", ErrInvalid, name, why)
	}
	switch {
	case !utf8.ValidString(name):
		return bad("is not valid UTF-8")
	case len(name) > 255:
		return bad("is longer than 255 bytes")
	case strings.ContainsRune(name, '/'):
		return bad("is not a plain file name (it contains '/')")
	case name == "." || name == "..":
		return bad("is not a file name")
	}
	for _, c := range name {
		if c < 0x20 || c == 0x7f {
			return bad("contains a control character")
		}
	}
	return nil
}

func validateEnv(env map[string]string) error {
	for k, v := range env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fmt.Errorf("%w: environment variable name %q", ErrInvalid, k)
		}
		if strings.IndexByte(v, 0) >= 0 {
			return fmt.Errorf("%w: environment variable %s contains a NUL byte", ErrInvalid, k)
		}
	}
	return nil
}

// validateFiles checks input files' paths (none twice, none a directory
// of another) and that they fit the workspace.
func validateFiles(files []File, workspace int64) error {
	var total int64
	seen := map[string]bool{}
	for _, f := range files {
		p, err := CleanPath(f.Path)
		if err != nil {
			return err
		}
		if seen[p] {
			return fmt.Errorf("%w: file %q given twice", ErrInvalid, f.Path)
		}
		seen[p] = true
		total += int64(len(f.Content)) + 4096
	}
	for p := range seen {
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			if seen[d] {
				return fmt.Errorf("%w: file %q is also the directory of file %q", ErrInvalid, d, p)
			}
		}
	}
	if total > workspace {
		return fmt.Errorf("%w: input files take %s, more than the workspace's %s", ErrInvalid, FormatBytes(total), FormatBytes(workspace))
	}
	return nil
}

// CleanPath checks a workspace-relative path and returns it cleaned: not
// absolute, no "..", no empty or NUL-containing names, valid UTF-8, at most
// 4096 bytes with components of at most 255.
func CleanPath(p string) (string, error) {
	bad := func(why string) (string, error) {
		return "", fmt.Errorf("%w: file path %q %s", ErrInvalid, p, why)
	}
	switch {
	case p == "":
		return bad("is empty")
	case strings.HasPrefix(p, "/"):
		return bad("is absolute; give it relative to the workspace")
	case strings.IndexByte(p, 0) >= 0:
		return bad("contains a NUL byte")
	case !utf8.ValidString(p):
		return bad("is not valid UTF-8")
	case len(p) > 4096:
		return bad("is longer than 4096 bytes")
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return bad(`contains ".."`)
		}
		if len(part) > 255 {
			return bad("has a name longer than 255 bytes")
		}
	}
	c := path.Clean(p)
	if c == "." {
		return bad("names the workspace itself")
	}
	return c, nil
}
