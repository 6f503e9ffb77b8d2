package sandbox

import (
	"encoding/json"
	"fmt"
	"time"
)

// JSON forms: limits take durations as strings ("10s", "250ms") or as
// seconds; usage reports milliseconds, which read well and survive
// languages whose numbers are doubles.

type limitsJSON struct {
	WallTime       jsonDuration `json:"wall_time,omitempty"`
	CPUTime        jsonDuration `json:"cpu_time,omitempty"`
	Memory         int64        `json:"memory,omitempty"`
	Processes      int          `json:"processes,omitempty"`
	OutputBytes    int64        `json:"output_bytes,omitempty"`
	WorkspaceBytes int64        `json:"workspace_bytes,omitempty"`
	OpenFiles      int          `json:"open_files,omitempty"`
}

// MarshalJSON writes durations as strings such as "10s".
func (l Limits) MarshalJSON() ([]byte, error) {
	return json.Marshal(limitsJSON{jsonDuration(l.WallTime), jsonDuration(l.CPUTime), l.Memory, l.Processes, l.OutputBytes, l.WorkspaceBytes, l.OpenFiles})
}

// UnmarshalJSON reads durations as strings ("1m30s") or numbers of seconds.
func (l *Limits) UnmarshalJSON(data []byte) error {
	var j limitsJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*l = Limits{time.Duration(j.WallTime), time.Duration(j.CPUTime), j.Memory, j.Processes, j.OutputBytes, j.WorkspaceBytes, j.OpenFiles}
	return nil
}

type jsonDuration time.Duration

func (d jsonDuration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *jsonDuration) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("%w: duration %q", ErrInvalid, s)
		}
		*d = jsonDuration(v)
		return nil
	}
	var secs float64
	if err := json.Unmarshal(data, &secs); err != nil {
		return fmt.Errorf("%w: duration must be a string like \"10s\" or a number of seconds", ErrInvalid)
	}
	*d = jsonDuration(secs * float64(time.Second))
	return nil
}

type usageJSON struct {
	WallMS      float64 `json:"wall_ms"`
	CPUUserMS   float64 `json:"cpu_user_ms"`
	CPUSystemMS float64 `json:"cpu_system_ms"`
	PeakMemory  int64   `json:"peak_memory_bytes"`
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// MarshalJSON reports times in milliseconds.
func (u Usage) MarshalJSON() ([]byte, error) {
	return json.Marshal(usageJSON{ms(u.Wall), ms(u.CPUUser), ms(u.CPUSystem), u.PeakMemory})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (u *Usage) UnmarshalJSON(data []byte) error {
	var j usageJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	d := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	*u = Usage{d(j.WallMS), d(j.CPUUserMS), d(j.CPUSystemMS), j.PeakMemory}
	return nil
}
