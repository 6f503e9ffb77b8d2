package sandbox

import (
	"fmt"
	"strings"

	"github.com/dustin/go-humanize"
)

// ParseBytes reads a size with a unit: "256MiB", "1GB", "512k", "1048576".
func ParseBytes(s string) (int64, error) {
	n, err := humanize.ParseBytes(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%w: size %q: use a number with a unit such as 256MiB or 1GB", ErrInvalid, s)
	}
	if n > 1<<62 {
		return 0, fmt.Errorf("%w: size %q is too large", ErrInvalid, s)
	}
	return int64(n), nil
}

// FormatBytes writes a size in binary units: "256 MiB".
func FormatBytes(n int64) string {
	if n < 0 {
		return fmt.Sprintf("-%s", humanize.IBytes(uint64(-n)))
	}
	return humanize.IBytes(uint64(n))
}
