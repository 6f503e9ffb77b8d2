package policy

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v4"
)

// defaultPolicyFile is the default policy, written as a policy file.
//
//go:embed default_policy.yaml
var defaultPolicyFile []byte

// DefaultPolicyFile returns the text of the default policy file: a
// commented starting point for writing one's own.
func DefaultPolicyFile() []byte {
	return bytes.Clone(defaultPolicyFile)
}

// policyFile is the format of a policy file.
type policyFile struct {
	Version    int               `yaml:"version"`
	Base       string            `yaml:"base"`
	Default    string            `yaml:"default"`
	Severities map[string]string `yaml:"severities"`
	Rules      map[string]string `yaml:"rules"`
}

// ParsePolicy reads a policy file, YAML or JSON (JSON is read as YAML):
//
//	version: 1          # optional; 1 is the only version
//	base: default       # start from the default policy (the default) or "none"
//	default: allow      # for findings nothing else covers
//	severities:         # info, low, medium, high, critical
//	  high: ask
//	rules:              # rule ids, or groups as "group.*"
//	  network: deny
//	  destructive.*: deny
//
// Entries override those of the base. Unknown fields, rule ids, groups,
// severities and actions are errors.
func ParsePolicy(data []byte) (*Policy, error) {
	f, err := decodePolicyFile(data)
	if err != nil {
		return nil, err
	}
	var p *Policy
	switch strings.ToLower(f.Base) {
	case "", "default":
		p = DefaultPolicy()
	case "none":
		p = &Policy{}
	default:
		return nil, fmt.Errorf("policy file: unknown base %q (want default or none)", f.Base)
	}
	if err := f.apply(p); err != nil {
		return nil, err
	}
	return p, nil
}

// decodePolicyFile reads the YAML (or JSON) of a policy file.
func decodePolicyFile(data []byte) (*policyFile, error) {
	var f policyFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		msg := strings.ReplaceAll(err.Error(), "in type policy.policyFile", "(known fields: version, base, default, severities, rules)")
		return nil, fmt.Errorf("policy file: %s", msg)
	}
	if f.Version != 0 && f.Version != 1 {
		return nil, fmt.Errorf("policy file: unsupported version %d (want 1)", f.Version)
	}
	return &f, nil
}

// apply sets the file's entries on p.
func (f *policyFile) apply(p *Policy) error {
	if f.Default != "" {
		a, err := parseAction(f.Default)
		if err != nil {
			return fmt.Errorf("policy file: default: %w", err)
		}
		p.Default = a
	}
	for _, name := range sortedKeys(f.Severities) {
		s, err := parseSeverity(name)
		if err != nil {
			return fmt.Errorf("policy file: severities: %w", err)
		}
		a, err := parseAction(f.Severities[name])
		if err != nil {
			return fmt.Errorf("policy file: severities: %s: %w", name, err)
		}
		if p.Severities == nil {
			p.Severities = make(map[Severity]Action)
		}
		p.Severities[s] = a
	}
	for _, id := range sortedKeys(f.Rules) {
		if err := checkRuleKey(id); err != nil {
			return fmt.Errorf("policy file: rules: %w", err)
		}
		a, err := parseAction(f.Rules[id])
		if err != nil {
			return fmt.Errorf("policy file: rules: %s: %w", id, err)
		}
		if p.Rules == nil {
			p.Rules = make(map[string]Action)
		}
		p.Rules[id] = a
	}
	return nil
}

// LoadPolicy reads a policy file from disk; see [ParsePolicy].
func LoadPolicy(path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	p, err := ParsePolicy(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
