package linux

import (
	"strings"
	"testing"
)

func TestRequireNamesMissingLayers(t *testing.T) {
	rep := Report{Layers: []Layer{
		{Name: LayerUserNS, Required: true, Available: true},
		{Name: LayerSeccomp, Required: true, Detail: "seccomp filters unavailable"},
		{Name: LayerCgroup, Required: true, Detail: "no usable cgroup hierarchy"},
		{Name: LayerLandlock, Required: false, Detail: "landlock unavailable"},
	}}
	err := rep.Require(nil)
	if err == nil {
		t.Fatal("missing layers accepted")
	}
	for _, want := range []string{"seccomp: seccomp filters unavailable", "cgroup: no usable cgroup hierarchy", `allow the weaker mode "cgroup"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "landlock") {
		t.Errorf("optional layer reported as required: %v", err)
	}
	if err := rep.Require([]string{LayerSeccomp}); err == nil || strings.Contains(err.Error(), "seccomp:") {
		t.Errorf("waiving seccomp: %v", err)
	}
	if err := rep.Require([]string{LayerSeccomp, LayerCgroup}); err != nil {
		t.Errorf("waiving both: %v", err)
	}
	if err := rep.Require([]string{LayerUserNS}); err == nil || !strings.Contains(err.Error(), "cannot be waived") {
		t.Errorf("waiving a namespace: %v", err)
	}
}
