package docker_test

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/docker"
)

// TestSeedFlow is the seed material's Docker flow end to end: a CSV goes
// in, a script writes a PNG plot and a summary, both come back out, and no
// container of the runtime's is left once it has closed.
func TestSeedFlow(t *testing.T) { seedFlow(t, newRuntime(t, 1)) }

// seedFlow runs the seed's flow on rt, then closes it and checks that no
// container of the runtime's is left.
func seedFlow(t *testing.T, rt *docker.Runtime) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	csv := "x,y\n1,2\n2,4\n3,9\n4,16\n"
	res, err := rt.Run(ctx, sandbox.Request{
		Language: sandbox.Python,
		Files:    []sandbox.File{{Path: "data/in.csv", Content: []byte(csv)}},
		Code: `import os, pandas as pd, matplotlib.pyplot as plt
os.makedirs("out")
df = pd.read_csv("data/in.csv")
df.plot(x="x", y="y").get_figure().savefig("out/plot.png")
open("out/summary.txt", "w").write(f"rows={len(df)} ymax={df.y.max()}\n")
print("done")`,
		FileContents: 1 << 20,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() || res.Stdout != "done\n" {
		t.Fatalf("the script failed: %s\n%s", res.Summary(), res.Stderr)
	}
	got := map[string][]byte{}
	for _, f := range res.Files {
		got[f.Path] = f.Content
	}
	if png := got["out/plot.png"]; !bytes.HasPrefix(png, []byte("\x89PNG\r\n")) {
		t.Errorf("out/plot.png is not a PNG (%d bytes); files: %v", len(png), res.Files)
	}
	if s := string(got["out/summary.txt"]); s != "rows=4 ymax=16\n" {
		t.Errorf("out/summary.txt = %q", s)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	cli, err := client.NewClientWithOpts(client.WithHost(os.Getenv("CODERUN_TEST_DOCKER_HOST")), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	left, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", "io.github.coderun.sandbox"))})
	if err != nil {
		t.Fatal(err)
	}
	// This process's only: other tests and processes may share the engine
	// (the owner label is "BOOT/PID/START").
	var names []string
	for _, c := range left {
		if f := strings.Split(c.Labels["io.github.coderun.owner"], "/"); len(f) == 3 && f[1] == strconv.Itoa(os.Getpid()) {
			names = append(names, strings.Join(c.Names, ","))
		}
	}
	if len(names) > 0 {
		t.Errorf("containers left after the runtime closed: %v", names)
	}
}
