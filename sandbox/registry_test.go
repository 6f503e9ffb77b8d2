package sandbox

import (
	"errors"
	"slices"
	"testing"
)

func TestRegisterLookup(t *testing.T) {
	name := "test-" + t.Name()
	type opts struct{ N int }
	Register(name, Driver{
		Options: func() any { return &opts{N: 1} },
		Open:    func(o any) (Runtime, error) { return nil, errors.New("opened with " + string(rune('0'+o.(*opts).N))) },
	})
	d, ok := Lookup(name)
	if !ok {
		t.Fatal("not found")
	}
	if _, err := d.Open(d.Options()); err == nil || err.Error() != "opened with 1" {
		t.Errorf("Open: %v", err)
	}
	if !slices.Contains(Drivers(), name) || !slices.IsSorted(Drivers()) {
		t.Errorf("Drivers() = %v", Drivers())
	}
	if _, ok := Lookup("test-never-registered"); ok {
		t.Error("found a runtime never registered")
	}
	for _, bad := range []struct {
		name string
		d    Driver
	}{{name, d}, {"", d}, {"test-incomplete", Driver{Options: d.Options}}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%q) did not panic", bad.name)
				}
			}()
			Register(bad.name, bad.d)
		}()
	}
}
