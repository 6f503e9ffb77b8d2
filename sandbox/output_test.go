package sandbox

import "testing"

func TestOutputBufferKeepsTheFirstBytes(t *testing.T) {
	overs := 0
	b := NewOutputBuffer(5, func() { overs++ })
	for _, s := range []string{"abc", "de"} {
		if n, err := b.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if b.Truncated() || overs != 0 {
		t.Fatalf("truncated %v, over called %d times at the limit", b.Truncated(), overs)
	}
	// Past the limit a write still succeeds (the pipe is drained), is not
	// kept, and calls over.
	if n, err := b.Write([]byte("fgh")); n != 3 || err != nil {
		t.Fatalf("Write past the limit = %d, %v", n, err)
	}
	if got := b.String(); got != "abcde" || !b.Truncated() || overs != 1 {
		t.Fatalf("kept %q, truncated %v, over called %d times", got, b.Truncated(), overs)
	}
}

func TestOutputBufferKeepsWhatFitsOfAWrite(t *testing.T) {
	b := NewOutputBuffer(4, func() {})
	b.Write([]byte("abcdef"))
	if got := b.String(); got != "abcd" || !b.Truncated() {
		t.Fatalf("kept %q, truncated %v", got, b.Truncated())
	}
}
