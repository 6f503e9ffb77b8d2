package linux

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// dropBoundingSet removes every capability from the calling thread's bounding
// set, so that nothing its children execute can ever gain one. (The user's
// process also runs under a non-zero uid, which clears its permitted and
// effective sets, and under no_new_privs, which ignores file capabilities and
// set-user-ID bits.)
func dropBoundingSet() error {
	last := lastCap()
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
			return fmt.Errorf("drop capability %d from bounding set: %w", c, err)
		}
	}
	return nil
}

func lastCap() int {
	data, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
			return n
		}
	}
	return 63
}
