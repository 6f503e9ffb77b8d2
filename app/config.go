package app

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/coderun/coderun/agent"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/server"
	"github.com/coderun/coderun/session"
	"github.com/coderun/coderun/store"
)

// Config is the whole configuration of a coderun program. Its zero value
// is not useful: start from [Defaults] or [Load], then override with
// [Config.Set].
type Config struct {
	// Runtime chooses and configures the sandbox runtime.
	Runtime RuntimeConfig
	// Limits are the limits of each one-shot execution (coderun exec, and
	// each execution of the agent).
	Limits sandbox.Limits
	// Store locates the records of agent runs.
	Store StoreConfig
	// Model is the model of the agent. Its keys and base URLs are read
	// from the environment by llm.ConfigFromEnv, never from the file.
	Model ModelConfig
	// Session are the defaults of notebook sessions.
	Session SessionConfig
	// Agent are the defaults of agent runs.
	Agent AgentConfig
	// Server configures `coderun serve` (see serve.go).
	Server ServerConfig

	settings []*setting
	sources  map[string]Source
	file     string // the configuration file read, if any
}

// RuntimeConfig chooses the sandbox runtime.
type RuntimeConfig struct {
	// Name is the runtime's registered name (see sandbox.Register).
	Name string
	// Options holds the options of every registered runtime, by name: the
	// value its Driver.Options returned, with the configuration applied.
	Options map[string]any
	// CompiledPool is how many sandboxes are kept ready for compiled
	// languages (C, C++, Go, Java, Rust, TypeScript), their two-step driver
	// started (toolchain.Options.Pool); 0: none. coderun serve keeps
	// DefaultServeCompiledPool.
	CompiledPool int
}

// StoreConfig locates the store of agent runs.
type StoreConfig struct {
	// DataDir is the directory of the SQLite database.
	DataDir string
	// Lease is how long a process holds a run it drives without renewing.
	Lease time.Duration
}

// ModelConfig names the model.
type ModelConfig struct {
	// Spec is "provider:model"; empty means none configured.
	Spec string
}

// SessionConfig are the defaults of notebook sessions.
type SessionConfig struct {
	// Limits bound each session's sandbox (Memory, Processes, OpenFiles,
	// WorkspaceBytes) and each of its cells (WallTime, CPUTime: zero for
	// none, OutputBytes), as session.Config.Limits.
	Limits sandbox.Limits
	// Grace is how long an interrupted cell has to stop.
	Grace   time.Duration
	Preload []string
	// MaxSessions and IdleTimeout configure a session.Manager.
	MaxSessions int
	IdleTimeout time.Duration
}

// Approve values: how code the policy asks about is decided.
const (
	ApproveAsk   = "ask"   // ask the approver; without one, reject
	ApproveAll   = "all"   // approve everything the policy does not deny
	ApproveNone  = "none"  // reject
	ApproveDefer = "defer" // pause the run until someone decides
)

// AgentConfig are the defaults of agent runs.
type AgentConfig struct {
	Mode   agent.Mode
	Format agent.Format
	// Approve is ApproveAsk, ApproveAll, ApproveNone or ApproveDefer.
	Approve string
	// Policy is a policy file replacing the default policy; empty: the default.
	Policy string
	// MaxRetries bounds the fixes of failing code; 0 means none.
	MaxRetries int
	// TimeoutRetries bounds the rewrites of code that ran past its time
	// limit; 0 means none.
	TimeoutRetries int
	MaxSteps       int
	// MaxTokens and MaxTime bound a run; 0 means no bound.
	MaxTokens int64
	MaxTime   time.Duration
}

// Environment variables read into the configuration (the model's keys and
// endpoints are read by llm.ConfigFromEnv).
const (
	EnvConfig  = "CODERUN_CONFIG"   // the configuration file
	EnvDataDir = "CODERUN_DATA_DIR" // store.data_dir
	EnvLease   = "CODERUN_LEASE"    // store.lease
	EnvModel   = "CODERUN_MODEL"    // model.spec
)

// SourceKind says what kind of place a value came from.
type SourceKind string

// The places a value comes from, weakest first.
const (
	FromDefault  SourceKind = "default"
	FromFile     SourceKind = "file"
	FromEnv      SourceKind = "env"
	FromOverride SourceKind = "flag"
)

// Source is where a setting's effective value came from.
type Source struct {
	Kind SourceKind
	// Name is the file, the environment variable, or the override as the
	// caller names it (a flag: "--memory").
	Name string
	// Line is the file's line.
	Line int
}

// Flag is the source of a value given by the caller's override named name.
func Flag(name string) Source { return Source{Kind: FromOverride, Name: name} }

// String says where: "default", "FILE:LINE", "env NAME", "flag NAME".
func (s Source) String() string {
	switch s.Kind {
	case FromFile:
		return fmt.Sprintf("%s:%d", s.Name, s.Line)
	case FromEnv:
		return "env " + s.Name
	case FromOverride:
		return "flag " + s.Name
	}
	return "default"
}

// ErrConfig marks errors in the configuration: a key or value that is
// wrong, wherever it came from. Nothing has been started.
var ErrConfig = errors.New("configuration error")

// errUnknownKey is the cause of a SettingError for a key no setting has.
var errUnknownKey = errors.New("unknown key")

// A SettingError is a value that could not be set: its key, where it came
// from, and why. It matches ErrConfig.
type SettingError struct {
	Key    string
	Value  string
	Source Source
	Err    error
}

func (e *SettingError) Error() string {
	if errors.Is(e.Err, errUnknownKey) {
		if e.Source.Kind == FromFile {
			return fmt.Sprintf("%s: unknown key %q", e.Source, e.Key)
		}
		return fmt.Sprintf("unknown configuration key %q", e.Key)
	}
	switch e.Source.Kind {
	case FromFile:
		return fmt.Sprintf("%s: %s: %v", e.Source, e.Key, e.Err)
	case FromEnv:
		return fmt.Sprintf("$%s=%q: %v", e.Source.Name, e.Value, e.Err)
	case FromOverride:
		return fmt.Sprintf("%s: %v", e.Source.Name, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Key, e.Err)
}

func (e *SettingError) Unwrap() error { return e.Err }

// Is makes a SettingError match ErrConfig.
func (e *SettingError) Is(target error) bool { return target == ErrConfig }

// setting is one key of the configuration, bound to its field.
type setting struct {
	key   string
	env   string        // the environment variable that sets it, if any
	field reflect.Value // addressable
	bytes bool          // an int64 size written with a unit
	// secret is set for a list of API keys: shown by their hashes only.
	secret bool
	check  func(v any) error
	want   string // if set, what any bad value is told instead
}

// Defaults is the configuration before any file, variable or flag: the
// built-in defaults of every package, with every registered runtime's
// options. getenv (os.Getenv) places the default data directory.
func Defaults(getenv func(string) string) *Config {
	c := &Config{
		Runtime: RuntimeConfig{Name: "linux", Options: map[string]any{}},
		Limits:  sandbox.DefaultLimits,
		Store:   StoreConfig{DataDir: defaultDataDir(getenv), Lease: store.DefaultLease},
		Session: SessionConfig{Limits: session.DefaultLimits, Grace: session.DefaultGrace, MaxSessions: 100, IdleTimeout: 30 * time.Minute},
		Agent: AgentConfig{Mode: agent.ModeSingle, Format: agent.FormatTool, Approve: ApproveAsk,
			MaxRetries: agent.DefaultMaxRetries, TimeoutRetries: agent.DefaultTimeoutRetries, MaxSteps: agent.DefaultMaxSteps},
		Server:  defaultServerConfig(),
		sources: map[string]Source{},
	}
	c.bind()
	return c
}

// bind builds the table of settings over c's fields.
func (c *Config) bind() {
	add := func(key, env string, ptr any, check func(any) error) *setting {
		s := &setting{key: key, env: env, field: reflect.ValueOf(ptr).Elem(), check: check}
		c.settings = append(c.settings, s)
		return s
	}
	size := func(key, env string, ptr *int64, check func(any) error) { add(key, env, ptr, check).bytes = true }

	add("runtime.name", "", &c.Runtime.Name, oneOf(sandbox.Drivers()...))
	add("runtime.compiled_pool", "", &c.Runtime.CompiledPool, notNegative)
	for _, name := range sandbox.Drivers() {
		d, _ := sandbox.Lookup(name)
		opts := d.Options()
		c.Runtime.Options[name] = opts
		v := reflect.ValueOf(opts).Elem()
		for i := 0; i < v.NumField(); i++ {
			if tag := v.Type().Field(i).Tag.Get("config"); tag != "" && v.Type().Field(i).IsExported() {
				add("runtime."+name+"."+tag, "", v.Field(i).Addr().Interface(), nil)
			}
		}
	}

	l := &c.Limits
	add("limits.timeout", "", &l.WallTime, nil)
	add("limits.cpu_time", "", &l.CPUTime, nil)
	size("limits.memory", "", &l.Memory, nil)
	add("limits.processes", "", &l.Processes, nil)
	size("limits.output_limit", "", &l.OutputBytes, nil)
	size("limits.workspace_size", "", &l.WorkspaceBytes, nil)
	add("limits.open_files", "", &l.OpenFiles, nil)

	add("store.data_dir", EnvDataDir, &c.Store.DataDir, nil)
	add("store.lease", EnvLease, &c.Store.Lease, positive).want = "want a positive duration such as 30s"

	add("model.spec", EnvModel, &c.Model.Spec, nil)

	sl := &c.Session.Limits
	add("session.timeout", "", &sl.WallTime, positive)
	add("session.cpu_time", "", &sl.CPUTime, notNegative)
	add("session.grace", "", &c.Session.Grace, positive)
	size("session.memory", "", &sl.Memory, positive)
	add("session.processes", "", &sl.Processes, positive)
	size("session.output_limit", "", &sl.OutputBytes, positive)
	size("session.workspace_size", "", &sl.WorkspaceBytes, positive)
	add("session.preload", "", &c.Session.Preload, nil)
	add("session.max_sessions", "", &c.Session.MaxSessions, positive)
	add("session.idle_timeout", "", &c.Session.IdleTimeout, nil)

	a := &c.Agent
	add("agent.mode", "", &a.Mode, func(v any) error {
		_, err := agent.ParseMode(string(v.(agent.Mode)))
		return err
	})
	add("agent.format", "", &a.Format, oneOf(string(agent.FormatTool), string(agent.FormatFenced)))
	add("agent.approve", "", &a.Approve, oneOf(ApproveAsk, ApproveAll, ApproveNone, ApproveDefer))
	add("agent.policy", "", &a.Policy, nil)
	add("agent.max_retries", "", &a.MaxRetries, notNegative)
	add("agent.timeout_retries", "", &a.TimeoutRetries, notNegative)
	add("agent.max_steps", "", &a.MaxSteps, notNegative)
	add("agent.max_tokens", "", &a.MaxTokens, notNegative)
	add("agent.max_time", "", &a.MaxTime, notNegative)

	c.bindServer(add, size)
}

// oneOf accepts the strings given.
func oneOf(values ...string) func(any) error {
	return func(v any) error {
		s := reflect.ValueOf(v).String()
		for _, ok := range values {
			if s == ok {
				return nil
			}
		}
		return fmt.Errorf("%q: want %s", s, strings.Join(values, ", "))
	}
}

func positive(v any) error {
	if reflect.ValueOf(v).Int() <= 0 {
		return errors.New("must be positive")
	}
	return nil
}

func notNegative(v any) error {
	if reflect.ValueOf(v).Int() < 0 {
		return errors.New("must not be negative")
	}
	return nil
}

func (c *Config) lookup(key string) *setting {
	for _, s := range c.settings {
		if s.key == key {
			return s
		}
	}
	return nil
}

// Keys lists every key of the configuration, in order.
func (c *Config) Keys() []string {
	keys := make([]string, len(c.settings))
	for i, s := range c.settings {
		keys[i] = s.key
	}
	return keys
}

// Set sets key ("limits.memory") from its text ("256MiB"; a list is
// comma-separated), recording src as its source. A key that does not exist
// or a value that does not fit is a *SettingError, which names both.
func (c *Config) Set(key, value string, src Source) error {
	return c.set(key, value, splitList(value), src)
}

// SetDefault sets key as Set does, but only while its value is still the
// built-in default: a command's own default (more pool sandboxes for a
// batch, say) that the file, the environment and flags still override.
func (c *Config) SetDefault(key, value string) error {
	if c.Source(key).Kind != FromDefault {
		return nil
	}
	return c.Set(key, value, Source{Kind: FromDefault})
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

// set parses text (or list, for a list setting) into the key's field.
func (c *Config) set(key, text string, list []string, src Source) error {
	s := c.lookup(key)
	if s == nil {
		return &SettingError{Key: key, Value: text, Source: src, Err: errUnknownKey}
	}
	v, err := s.parse(text, list)
	if err == nil && s.check != nil {
		err = s.check(v.Interface())
	}
	if err != nil && s.want != "" {
		err = errors.New(s.want)
	}
	if err != nil {
		return &SettingError{Key: key, Value: text, Source: src, Err: err}
	}
	s.field.Set(v)
	c.sources[key] = src
	return nil
}

var durationType = reflect.TypeFor[time.Duration]()

// parse turns text into a value of the setting's type.
func (s *setting) parse(text string, list []string) (reflect.Value, error) {
	t := s.field.Type()
	v := reflect.New(t).Elem()
	text = strings.TrimSpace(text)
	switch {
	case t == durationType:
		d, err := time.ParseDuration(text)
		if err != nil {
			return v, fmt.Errorf("%q: want a duration such as 30s or 2m", text)
		}
		v.SetInt(int64(d))
	case t.Kind() == reflect.String:
		v.SetString(text)
	case t.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(text)
		if err != nil {
			return v, fmt.Errorf("%q: want true or false", text)
		}
		v.SetBool(b)
	case s.bytes:
		n, err := sandbox.ParseBytes(text)
		if err != nil {
			return v, err
		}
		v.SetInt(n)
	case t.Kind() == reflect.Int || t.Kind() == reflect.Int64:
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return v, fmt.Errorf("%q: want a whole number", text)
		}
		v.SetInt(n)
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String:
		l := reflect.MakeSlice(t, 0, len(list))
		for _, it := range list {
			l = reflect.Append(l, reflect.ValueOf(it).Convert(t.Elem()))
		}
		v.Set(l)
	default:
		return v, fmt.Errorf("settings of type %s are not supported", t)
	}
	return v, nil
}

// value is the setting's value as a person writes it: durations and sizes
// with their units, lists as lists.
func (s *setting) value() any {
	f := s.field
	switch {
	case f.Type() == durationType:
		return time.Duration(f.Int()).String()
	case s.bytes:
		return strings.ReplaceAll(sandbox.FormatBytes(f.Int()), " ", "")
	case f.Kind() == reflect.String:
		return f.String()
	case f.Kind() == reflect.Slice:
		out := make([]string, f.Len())
		for i := range out {
			out[i] = f.Index(i).String()
			if s.secret {
				out[i] = server.HashKey(out[i])
			}
		}
		return out
	}
	return f.Interface()
}

// Source says where key's effective value came from.
func (c *Config) Source(key string) Source {
	if s, ok := c.sources[key]; ok {
		return s
	}
	return Source{Kind: FromDefault}
}

// Entry is one setting's effective value and where it came from.
type Entry struct {
	Key string
	// Value is a string (durations and sizes with their unit), a number, a
	// bool, or a list of strings.
	Value  any
	Source Source
}

// Entries lists every setting with its effective value and source, in the
// order of Keys.
func (c *Config) Entries() []Entry {
	out := make([]Entry, len(c.settings))
	for i, s := range c.settings {
		out[i] = Entry{Key: s.key, Value: s.value(), Source: c.Source(s.key)}
	}
	return out
}

// File is the configuration file that was read, or "" if none was.
func (c *Config) File() string { return c.file }
