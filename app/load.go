package app

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/coderun/coderun/store/sqlite"
	"go.yaml.in/yaml/v4"
)

// LoadOptions say where Load reads from.
type LoadOptions struct {
	// File is the configuration file the caller was given; it must exist.
	// Empty means $CODERUN_CONFIG (which must exist too), else DefaultFile
	// (which need not).
	File string
	// Getenv reads the environment (os.Getenv); nil means an empty one.
	Getenv func(string) string
}

// Load reads the configuration: the built-in defaults, overridden by the
// configuration file, overridden by the environment. The caller applies
// its own overrides (flags) on top with Set. Every error is a usage
// problem matching ErrConfig: a file that is missing (when named), not
// YAML, or has an unknown key or a bad value (named with its line).
func Load(opts LoadOptions) (*Config, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	c := Defaults(getenv)
	path, required := opts.File, true
	if path == "" {
		path = getenv(EnvConfig)
	}
	if path == "" {
		path, required = DefaultFile(getenv), false
	}
	if path != "" && !required {
		// A default file this process cannot even reach (another user's
		// home) is as good as absent; one it can see but not read is not.
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			path = ""
		}
	}
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, configError{fmt.Errorf("configuration file: %w", err)}
		}
		if err := c.readFile(path, data); err != nil {
			return nil, err
		}
		c.file = path
	}
	for _, s := range c.settings {
		if s.env == "" {
			continue
		}
		if v := getenv(s.env); v != "" {
			if err := c.Set(s.key, v, Source{Kind: FromEnv, Name: s.env}); err != nil {
				return nil, err
			}
		}
	}
	return c, nil
}

// DefaultFile is where the configuration file is looked for:
// $XDG_CONFIG_HOME/coderun/config.yaml, else
// $HOME/.config/coderun/config.yaml; "" if neither variable is set.
func DefaultFile(getenv func(string) string) string {
	if d := getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "coderun", "config.yaml")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".config", "coderun", "config.yaml")
	}
	return ""
}

// defaultDataDir is the store's directory when neither the file nor
// $CODERUN_DATA_DIR names one ("" when it cannot be placed: Open says so).
func defaultDataDir(getenv func(string) string) string {
	dir, err := sqlite.DefaultDir(func(k string) string {
		if k == EnvDataDir {
			return ""
		}
		return getenv(k)
	})
	if err != nil {
		return ""
	}
	return dir
}

// configError marks an error as a configuration problem (ErrConfig)
// without changing its message.
type configError struct{ error }

func (e configError) Unwrap() error        { return e.error }
func (e configError) Is(target error) bool { return target == ErrConfig }

// readFile applies a YAML configuration file: nested mappings whose leaves
// are the settings (runtime: {linux: {pool: 4}} sets runtime.linux.pool).
func (c *Config) readFile(path string, data []byte) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return configError{fmt.Errorf("%s: %w", path, err)}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return nil
	}
	return c.readMapping(path, "", root)
}

func (c *Config) readMapping(path, prefix string, n *yaml.Node) error {
	src := func(line int) Source { return Source{Kind: FromFile, Name: path, Line: line} }
	if n.Kind != yaml.MappingNode {
		what := "the file"
		if prefix != "" {
			what = strings.TrimSuffix(prefix, ".")
		}
		return configError{fmt.Errorf("%s:%d: %s: want a mapping of keys to values", path, n.Line, what)}
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := prefix + k.Value
		if seen[key] {
			return configError{fmt.Errorf("%s:%d: %s is set twice", path, k.Line, key)}
		}
		seen[key] = true
		s := c.lookup(key)
		switch {
		case s == nil && v.Kind == yaml.MappingNode && c.isSection(key):
			if err := c.readMapping(path, key+".", v); err != nil {
				return err
			}
		case s == nil:
			return &SettingError{Key: key, Source: src(k.Line), Err: errUnknownKey}
		case v.Kind == yaml.SequenceNode && s.field.Kind() == reflect.Slice:
			var list []string
			for _, it := range v.Content {
				if it.Kind != yaml.ScalarNode {
					return &SettingError{Key: key, Source: src(it.Line), Err: errors.New("want a list of values")}
				}
				list = append(list, it.Value)
			}
			if err := c.set(key, strings.Join(list, ","), list, src(v.Line)); err != nil {
				return err
			}
		case v.Kind == yaml.ScalarNode:
			text := v.Value
			if v.Tag == "!!null" {
				text = ""
			}
			if err := c.set(key, text, splitList(text), src(v.Line)); err != nil {
				return err
			}
		default:
			return &SettingError{Key: key, Source: src(v.Line), Err: errors.New("want a single value")}
		}
	}
	return nil
}

// isSection reports whether key is a prefix of settings (runtime.linux).
func (c *Config) isSection(key string) bool {
	for _, s := range c.settings {
		if strings.HasPrefix(s.key, key+".") {
			return true
		}
	}
	return false
}
