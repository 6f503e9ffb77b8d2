package toolchain

import (
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
)

// TestSplitterFindsTheMarkerAcrossWrites: whatever the chunks a stream
// arrives in, what comes before the marker is the compile step's, the
// three lines after it its report, and the rest the run step's.
func TestSplitterFindsTheMarkerAcrossWrites(t *testing.T) {
	marker := markerPrefix + "0123456789abcdef:"
	stream := "warning: x\ncoderun-compiled-01234 (not it)" + marker + "0 1700000000.250000\n0m0.001s 0m0.002s\n0m0.100s 0m0.020s\nhello\nworld"
	for size := 1; size <= len(stream); size++ {
		var header string
		s := &splitter{marker: []byte(marker), header: true, before: sandbox.NewOutputBuffer(1<<20, func() {}), after: sandbox.NewOutputBuffer(1<<20, func() {}),
			onMarker: func(h string) error { header = h; return nil }}
		for i := 0; i < len(stream); i += size {
			_, _ = s.Write([]byte(stream[i:min(i+size, len(stream))]))
		}
		s.flush()
		if got := s.before.String(); got != "warning: x\ncoderun-compiled-01234 (not it)" {
			t.Fatalf("chunks of %d: before = %q", size, got)
		}
		if header != "0 1700000000.250000\n0m0.001s 0m0.002s\n0m0.100s 0m0.020s\n" {
			t.Fatalf("chunks of %d: header = %q", size, header)
		}
		if got := s.after.String(); got != "hello\nworld" {
			t.Fatalf("chunks of %d: after = %q", size, got)
		}
	}
}

// TestSplitterWithoutMarker: a stream that never reaches the marker (a
// compile step that failed or was stopped) is the compile step's, bytes
// that might have begun the marker included.
func TestSplitterWithoutMarker(t *testing.T) {
	marker := markerPrefix + "0123456789abcdef:"
	s := &splitter{marker: []byte(marker), before: sandbox.NewOutputBuffer(1<<20, func() {}), after: sandbox.NewOutputBuffer(1<<20, func() {})}
	_, _ = s.Write([]byte("error: y\ncoderun-compi"))
	s.flush()
	if got := s.before.String(); got != "error: y\ncoderun-compi" || s.after.String() != "" {
		t.Fatalf("before %q, after %q", got, s.after.String())
	}
}

// TestSplitterBoundsEachStep: the compile step's output counts against
// its own limit, the run step's against its own.
func TestSplitterBoundsEachStep(t *testing.T) {
	marker := markerPrefix + "x:"
	var over []string
	s := &splitter{marker: []byte(marker), before: sandbox.NewOutputBuffer(4, func() { over = append(over, "compile") }),
		after: sandbox.NewOutputBuffer(8, func() { over = append(over, "run") })}
	_, _ = s.Write([]byte("abc" + marker + "12345678"))
	if len(over) != 0 {
		t.Fatalf("limits reached: %v", over)
	}
	_, _ = s.Write([]byte("9"))
	if strings.Join(over, ",") != "run" || s.after.String() != "12345678" || !s.after.Truncated() {
		t.Fatalf("over %v, after %q", over, s.after.String())
	}
}

func TestReportParsing(t *testing.T) {
	d, err := userSystem("1m2.500s 0m0.020s")
	if err != nil || d[0] != 62500*time.Millisecond || d[1] != 20*time.Millisecond {
		t.Errorf("userSystem = %v, %v", d, err)
	}
	if _, err := userSystem("garbage"); err == nil {
		t.Error("userSystem accepted garbage")
	}
	e, err := epoch("1700000000.25")
	if err != nil || !e.Equal(time.Unix(1700000000, 250000000)) {
		t.Errorf("epoch = %v, %v", e, err)
	}
	start := time.Unix(1700000000, 0)
	tw := &twoSteps{switched: make(chan struct{}), p: cpuProcess{cpu: time.Second}, start: start, launched: start}
	if err := tw.compiled("0 1700000000.5\n0m0.001s 0m0.000s\n0m0.010s 0m0.002s\n"); err != nil || tw.step != running ||
		tw.compCPU[0] != 11*time.Millisecond || tw.compCPU[1] != 2*time.Millisecond || !tw.ended.Equal(start.Add(500*time.Millisecond)) {
		t.Errorf("compiled: %v, step %v, cpu %v, ended %v", err, tw.step, tw.compCPU, tw.ended)
	}
	if err := (&twoSteps{switched: make(chan struct{})}).compiled("0\n"); err == nil {
		t.Error("a short report was accepted")
	}
}

// cpuProcess is a program that has used cpu.
type cpuProcess struct {
	sandbox.Process
	cpu time.Duration
}

func (p cpuProcess) CPUTime() (time.Duration, error) { return p.cpu, nil }

// TestReportIsBoundedByTheHost: a compile step's report (which the step
// can forge: see twoSteps.compiled) cannot end it after the host saw the
// report, before the job's start, nor give it more CPU than the sandbox
// used; the CPU it gives is scaled down, user and system in proportion.
func TestReportIsBoundedByTheHost(t *testing.T) {
	start := time.Now().Add(-time.Second)
	for _, c := range []struct {
		header    string
		used      time.Duration
		ended     func(time.Time) bool
		user, sys time.Duration
	}{
		{"0 4102444800.0\n60m0.000s 0m0.000s\n0m0.000s 0m0.000s\n", 300 * time.Millisecond,
			func(e time.Time) bool { return !e.After(time.Now()) && e.After(start) }, 300 * time.Millisecond, 0},
		{"0 1.0\n0m3.000s 0m1.000s\n0m0.000s 0m0.000s\n", 400 * time.Millisecond,
			func(e time.Time) bool { return e.Equal(start) }, 300 * time.Millisecond, 100 * time.Millisecond},
	} {
		tw := &twoSteps{switched: make(chan struct{}), p: cpuProcess{cpu: c.used}, start: start, launched: start}
		if err := tw.compiled(c.header); err != nil {
			t.Fatalf("%q: %v", c.header, err)
		}
		if !c.ended(tw.ended) || tw.compCPU[0] != c.user || tw.compCPU[1] != c.sys {
			t.Errorf("%q: ended %v (start %v), cpu %v, want %v %v", c.header, tw.ended, start, tw.compCPU, c.user, c.sys)
		}
	}
}
