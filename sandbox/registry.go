package sandbox

import (
	"fmt"
	"sort"
	"sync"
)

// A Driver is how a runtime is built from configuration: it is what a
// runtime package registers under its name (see [Register]), so that a
// program picks a runtime with a string and a new runtime is one added
// package and one import.
type Driver struct {
	// Options returns a pointer to a new options struct of the runtime,
	// holding its defaults. Its exported fields tagged `config:"name"` are
	// the runtime's settings (strings, bools, ints, durations, string
	// lists), which a configuration sets by those names.
	Options func() any
	// Open builds the runtime from a value Options returned.
	Open func(options any) (Runtime, error)
}

// registry holds the registered drivers. It is the one piece of
// package-level state: runtime packages add themselves from init, as
// database/sql drivers do.
var registry = struct {
	sync.RWMutex
	drivers map[string]Driver
}{drivers: map[string]Driver{}}

// Register makes a runtime available under name. It panics if name is
// empty, already registered, or the driver incomplete: a programming error
// found at start.
func Register(name string, d Driver) {
	if name == "" || d.Options == nil || d.Open == nil {
		panic("sandbox: Register needs a name, Options and Open")
	}
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.drivers[name]; dup {
		panic(fmt.Sprintf("sandbox: runtime %q registered twice", name))
	}
	registry.drivers[name] = d
}

// Lookup returns the driver registered under name.
func Lookup(name string) (Driver, bool) {
	registry.RLock()
	defer registry.RUnlock()
	d, ok := registry.drivers[name]
	return d, ok
}

// Drivers lists the names of the registered runtimes, sorted.
func Drivers() []string {
	registry.RLock()
	defer registry.RUnlock()
	names := make([]string, 0, len(registry.drivers))
	for n := range registry.drivers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
