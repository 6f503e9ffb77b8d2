package session

import (
	"encoding/json"
	"fmt"
)

// HistoryOutputBytes bounds the outputs a session's history keeps (its
// cells' streams, results, displays and tracebacks together). Past it, the
// outputs of the oldest cells are dropped, each replaced by a note saying
// so; their code, status and timing stay. Each cell's output is bounded
// by the session's output limit, but the history grows with every cell: a
// caller running cell after cell of output would otherwise have the host
// keep all of it for the session's life.
const HistoryOutputBytes = 32 << 20

// keepHistory accounts for the cell just appended to s.history and drops
// the outputs of the oldest cells while the history's outputs come to
// more than HistoryOutputBytes (never the newest cell's). s.mu is held.
func (s *Session) keepHistory() {
	n := len(s.history)
	s.historyBytes += outputsSize(s.history[n-1].Outputs)
	for s.historyBytes > HistoryOutputBytes && s.trimmed < n-1 {
		c := s.history[s.trimmed]
		s.trimmed++
		size := outputsSize(c.Outputs)
		if size == 0 {
			continue
		}
		note := []Output{{Type: TypeStream, Name: "stderr", Text: fmt.Sprintf(
			"coderun: this cell's outputs (%d bytes) were dropped from the session's history, which keeps the latest %d MiB of outputs\n",
			size, HistoryOutputBytes>>20)}}
		c.Outputs = note // a new slice: copies handed out keep theirs
		s.historyBytes += outputsSize(note) - size
	}
}

// outputsSize is about how many bytes outs hold.
func outputsSize(outs []Output) int64 {
	var n int64
	for _, o := range outs {
		n += int64(len(o.Text) + len(o.Ename) + len(o.Evalue))
		for _, l := range o.Traceback {
			n += int64(len(l))
		}
		for k, v := range o.Data {
			n += int64(len(k))
			if s, ok := v.(string); ok {
				n += int64(len(s))
			} else if b, err := json.Marshal(v); err == nil {
				n += int64(len(b))
			}
		}
	}
	return n
}
