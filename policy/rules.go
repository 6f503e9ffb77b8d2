package policy

import (
	"fmt"
	"strings"
)

// Severity says how much harm a finding could do, from Info to Critical.
type Severity int

// Severities, in increasing order.
const (
	Info Severity = iota
	Low
	Medium
	High
	Critical
)

var severityNames = [...]string{"info", "low", "medium", "high", "critical"}

// String returns the lower-case name: "info", "low", "medium", "high" or "critical".
func (s Severity) String() string {
	if s >= 0 && int(s) < len(severityNames) {
		return severityNames[s]
	}
	return fmt.Sprintf("severity(%d)", int(s))
}

// ParseSeverity reads a severity name as written by [Severity.String].
func ParseSeverity(name string) (Severity, error) {
	s, err := parseSeverity(name)
	if err != nil {
		return 0, fmt.Errorf("policy: %w", err)
	}
	return s, nil
}

func parseSeverity(name string) (Severity, error) {
	for i, n := range severityNames {
		if strings.EqualFold(strings.TrimSpace(name), n) {
			return Severity(i), nil
		}
	}
	return 0, fmt.Errorf("unknown severity %q (want one of %s)", name, strings.Join(severityNames[:], ", "))
}

// MarshalText implements encoding.TextMarshaler.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (s *Severity) UnmarshalText(b []byte) error {
	v, err := ParseSeverity(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// Rule is one kind of finding: a stable id, how severe it is, and what it means.
type Rule struct {
	ID       string   `json:"id"`
	Severity Severity `json:"severity"`
	Summary  string   `json:"summary"`
}

// Rule ids. A policy file names rules by these ids, or a group of them by
// the part before the dot followed by ".*" (for example "destructive.*").
const (
	RuleProcessSpawn     = "process.spawn"
	RuleProcessSignal    = "process.signal"
	RuleMultiprocessing  = "process.multiprocessing"
	RuleNetwork          = "network"
	RuleNativeCode       = "native.code"
	RuleDynamicCode      = "dynamic.code"
	RuleOutsideWorkspace = "fs.outside-workspace"
	RuleSystemPath       = "fs.system-path"
	RuleRmRoot           = "destructive.rm-root"
	RuleDiskWrite        = "destructive.disk-write"
	RuleFormatDisk       = "destructive.format-disk"
	RuleForkBomb         = "destructive.fork-bomb"
	RuleChmodRoot        = "destructive.chmod-root"
	RulePipeToShell      = "destructive.pipe-to-shell"
	RulePower            = "destructive.power"
	RuleKillAll          = "destructive.kill-all"
	RuleSyntaxError      = "analysis.syntax-error"
	RuleUnavailable      = "analysis.unavailable"
)

var catalogue = []Rule{
	{RuleProcessSpawn, High, "starts other programs or a shell (subprocess, os.system, os.exec*, os.spawn*, os.fork, pty)"},
	{RuleProcessSignal, Medium, "sends signals to other processes (os.kill, os.killpg)"},
	{RuleMultiprocessing, Low, "starts Python worker processes (multiprocessing, ProcessPoolExecutor)"},
	{RuleNetwork, High, "uses the network: sockets, HTTP and other clients, URL downloads, package installs"},
	{RuleNativeCode, High, "loads and calls native code directly (ctypes, cffi)"},
	{RuleDynamicCode, High, "runs code that cannot be reviewed ahead of time (eval/exec/compile/__import__ of computed values, eval of a variable in shell)"},
	{RuleOutsideWorkspace, Medium, "touches a path outside the workspace (/work and /tmp), or escapes it with .."},
	{RuleSystemPath, High, "touches system or personal paths: /etc, /proc, /sys, /dev, /boot, /root, /home, ~"},
	{RuleRmRoot, Critical, "recursively removes /, a top-level system directory or the home directory"},
	{RuleDiskWrite, Critical, "writes to a raw disk or memory device (dd of=/dev/sda, > /dev/sda)"},
	{RuleFormatDisk, Critical, "formats or repartitions a disk (mkfs, fdisk, wipefs, ...)"},
	{RuleForkBomb, Critical, "a fork bomb: a process that multiplies itself without end"},
	{RuleChmodRoot, Critical, "recursively changes permissions or ownership of / or a system directory"},
	{RulePipeToShell, Critical, "downloads a script and runs it (curl ... | sh, bash <(curl ...))"},
	{RulePower, Critical, "shuts down or reboots the machine"},
	{RuleKillAll, Critical, "kills every process it can (kill -9 -1)"},
	{RuleSyntaxError, Info, "the code does not parse; it cannot run as written, so the run will report the error"},
	{RuleUnavailable, Medium, "the code could not be analysed (analyser missing, timed out or failed)"},
}

var rulesByID = func() map[string]Rule {
	m := make(map[string]Rule, len(catalogue))
	for _, r := range catalogue {
		m[r.ID] = r
	}
	return m
}()

// Rules returns the catalogue of rules, in a stable order.
func Rules() []Rule {
	return append([]Rule(nil), catalogue...)
}

// LookupRule returns the rule with the given id.
func LookupRule(id string) (Rule, bool) {
	r, ok := rulesByID[id]
	return r, ok
}

// ruleGroup returns the group of a rule id: "destructive" for "destructive.rm-root".
func ruleGroup(id string) string {
	if i := strings.IndexByte(id, '.'); i >= 0 {
		return id[:i]
	}
	return id
}
