package linux

import (
	"strings"
	"testing"
)

func TestStatStartTime(t *testing.T) {
	// A command name with spaces and a ')' of its own.
	stat := "42 (a b) c) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 123456 1000 10 18446744073709551615\n"
	got, err := statStartTime([]byte(stat))
	if err != nil || got != 123456 {
		t.Fatalf("statStartTime = %d, %v; want 123456", got, err)
	}
	for _, bad := range []string{"42 no name S 1", "42 (x) S 1 2 3", "42 (x) S 1 42 42 0 -1 4 100 0 0 0 1 2 0 0 20 0 1 0 abc 1000"} {
		if _, err := statStartTime([]byte(bad)); err == nil {
			t.Errorf("statStartTime(%q): no error", bad)
		}
	}
}

func TestTimeOffsets(t *testing.T) {
	// Started 5.25 s after boot; now 7.5 s on the boot-time clock and 6 s
	// on the monotonic one (1.5 s suspended).
	got := string(timeOffsets(5_250_000_000, 7_500_000_000, 6_000_000_000))
	want := "monotonic -4 250000000\nboottime -6 750000000\n"
	if got != want {
		t.Fatalf("timeOffsets =\n%s\nwant\n%s", got, want)
	}
	// Both clocks read 0 at the start and agree afterwards.
	for _, l := range strings.Split(strings.TrimSpace(got), "\n") {
		if f := strings.Fields(l); len(f) != 3 || strings.HasPrefix(f[2], "-") {
			t.Errorf("line %q: want clock, seconds and non-negative nanoseconds", l)
		}
	}
}
