// Package app is coderun's composition root: it reads one [Config] — from
// a YAML file, environment variables and the caller's own overrides (a
// command's flags), in that order of precedence, remembering where each
// value came from — and builds from it what a coderun program is made of:
// the sandbox runtime ([Config.OpenRuntime], through the registry of
// package sandbox), the store of agent runs ([Config.OpenStore]), the model
// ([Config.OpenModel]), sessions ([Config.SessionConfig], [Config.NewManager])
// and the agent ([Config.NewAgent]).
//
// The command line (cmd/coderun) is a thin layer over it: flags become
// overrides, and what the constructors return is rendered. A server builds
// the same things from the same Config.
//
// Adding a runtime does not touch this package: the runtime's package
// registers a [sandbox.Driver] with settings tagged `config:"name"`, and
// they appear under runtime.<name> in the configuration as soon as the
// program imports that package.
//
// It is not the module's root package: that package would be imported by
// the packages this one imports (as llm is by its providers), so it could
// not import them back.
package app
