package plural

import "testing"

func TestCount(t *testing.T) {
	for _, c := range []struct {
		n    int
		noun string
		more []string
		want string
	}{
		{0, "item", nil, "0 items"},
		{1, "item", nil, "1 item"},
		{2, "item", nil, "2 items"},
		{1, "retry", nil, "1 retry"},
		{3, "retry", nil, "3 retries"},
		{2, "day", nil, "2 days"},
		{2, "process", []string{"processes"}, "2 processes"},
		{1, "process", []string{"processes"}, "1 process"},
	} {
		if got := Count(c.n, c.noun, c.more...); got != c.want {
			t.Errorf("Count(%d, %q) = %q, want %q", c.n, c.noun, got, c.want)
		}
	}
}
