package agent

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// Output clipped for the model is cut between characters, never inside
// one, at every offset.
func TestClipAndTailKeepUTF8Whole(t *testing.T) {
	for _, unit := range []string{"é", "€", "😀", "aé€😀"} {
		for n := 1; n < 40; n++ {
			s := strings.Repeat(unit, n)
			for max := 1; max < len(s)+2; max++ {
				if c := clip(s, max); !utf8.ValidString(c) {
					t.Fatalf("clip(%q×%d, %d) = %q: not valid UTF-8", unit, n, max, c)
				}
				if c := tail(s, 10, max); !utf8.ValidString(c) {
					t.Fatalf("tail(%q×%d, %d) = %q: not valid UTF-8", unit, n, max, c)
				}
			}
		}
	}
	s := strings.Repeat("é", 100)
	if c := clip(s, 50); !strings.HasPrefix(c, strings.Repeat("é", 16)+"\n[… ") || !strings.HasSuffix(c, " cut …]\n"+strings.Repeat("é", 8)) {
		t.Errorf("clip: %q", c)
	}
}
