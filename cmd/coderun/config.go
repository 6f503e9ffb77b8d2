package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/coderun/coderun/app"
	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v4"
)

func newConfigCmd(g *globalFlags) *cobra.Command {
	var asJSON bool
	d := &dataFlags{g: g}
	var model string
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Print the effective configuration, each value with where it came from",
		Long: `Print the configuration the other commands use, each value with its source:
the built-in default, the configuration file (FILE:LINE), an environment
variable (env NAME), or a flag given here (flag --x).

The configuration file is YAML: --config FILE, else $CODERUN_CONFIG, else
$XDG_CONFIG_HOME/coderun/config.yaml (~/.config/coderun/config.yaml) if it
exists. Environment variables override the file, and flags override both.
What this prints is itself a valid configuration file.

The model providers' keys and endpoints are read from the environment only;
they are listed at the end, keys as set or unset.`,
		Example: `  coderun config
  coderun config --json
  coderun --config team.yaml config --rootfs /srv/debian`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := g.load(g.runtimeFlags(), d.flags(), []binding{{"model", "model.spec", &model}})
			if err != nil {
				return err
			}
			if asJSON {
				return writeConfigJSON(cmd.OutOrStdout(), cfg, os.Getenv)
			}
			return writeConfigYAML(cmd.OutOrStdout(), cfg, os.Getenv)
		},
	}
	g.register(cmd)
	d.register(cmd)
	cmd.Flags().StringVar(&model, "model", "", "model as provider:model (default $CODERUN_MODEL)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the configuration as JSON")
	return cmd
}

// writeConfigYAML prints the configuration as a YAML file with each
// value's source as a comment.
func writeConfigYAML(w io.Writer, cfg *app.Config, getenv func(string) string) error {
	if f := cfg.File(); f != "" {
		fmt.Fprintf(w, "# configuration file: %s\n", f)
	} else {
		fmt.Fprintf(w, "# configuration file: none (looked for %s)\n", dash(app.DefaultFile(getenv)))
	}
	var open []string // the sections of the previous key
	for _, e := range cfg.Entries() {
		parts := strings.Split(e.Key, ".")
		sections := parts[:len(parts)-1]
		same := 0
		for same < len(open) && same < len(sections) && open[same] == sections[same] {
			same++
		}
		for i := same; i < len(sections); i++ {
			fmt.Fprintf(w, "%s%s:\n", strings.Repeat("  ", i), sections[i])
		}
		open = sections
		v, err := yamlValue(e.Value)
		if err != nil {
			return fmt.Errorf("%s: %w", e.Key, err)
		}
		fmt.Fprintf(w, "%s%s: %s  # %s\n", strings.Repeat("  ", len(sections)), parts[len(parts)-1], v, e.Source)
	}
	fmt.Fprintln(w, "# read by the model providers from the environment:")
	for _, e := range app.ModelEnvironment(getenv) {
		fmt.Fprintf(w, "#   %s: %s\n", e.Name, dash(e.Value))
	}
	return nil
}

// yamlValue writes one value as YAML on one line (a list in flow style).
func yamlValue(v any) (string, error) {
	var n yaml.Node
	if err := n.Encode(v); err != nil {
		return "", err
	}
	if n.Kind == yaml.SequenceNode {
		n.Style = yaml.FlowStyle
	}
	out, err := yaml.Marshal(&n)
	return strings.TrimSpace(string(out)), err
}

// writeConfigJSON prints the configuration as JSON: every setting with its
// value and source, and the model's environment.
func writeConfigJSON(w io.Writer, cfg *app.Config, getenv func(string) string) error {
	type setting struct {
		Value  any    `json:"value"`
		Source string `json:"source"`
	}
	out := struct {
		File        string             `json:"file,omitempty"`
		Settings    map[string]setting `json:"settings"`
		Environment map[string]string  `json:"environment"`
	}{File: cfg.File(), Settings: map[string]setting{}, Environment: map[string]string{}}
	for _, e := range cfg.Entries() {
		out.Settings[e.Key] = setting{e.Value, e.Source.String()}
	}
	for _, e := range app.ModelEnvironment(getenv) {
		out.Environment[e.Name] = e.Value
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
