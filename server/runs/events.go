package runs

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/coderun/coderun/server"
	"github.com/coderun/coderun/server/sse"
	"github.com/coderun/coderun/store"
)

// How often a followed run is read again when no step of this server's
// tells of a change (a run driven by another process), and how often an
// idle stream sends a comment to keep proxies from closing it.
const (
	pollEvery      = time.Second
	heartbeatEvery = 15 * time.Second
)

// events streams a run's progress as Server-Sent Events: each stored
// step (event "step", id its seq, data the step as GET .../steps shows
// it), the run whenever its shown status changes (event "status", data
// the run), and, once the run has ended, event "end" with the run; then
// the stream closes. A run paused for approval keeps its stream open: a
// decision resumes it. A client reconnecting with Last-Event-ID (or
// ?after=SEQ) gets the steps after that one. When the server shuts down
// the stream ends with event "shutdown", the run as it is (a run it was
// driving is suspended, to be resumed).
func (s *Service) events(w http.ResponseWriter, r *http.Request, st store.Tenant) {
	run, ok := lookup(w, r, st)
	if !ok {
		return
	}
	after := 0
	for _, v := range []string{r.Header.Get("Last-Event-ID"), r.URL.Query().Get("after")} {
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			server.WriteError(w, http.StatusBadRequest, server.CodeBadRequest, fmt.Sprintf("after %q: want a step number", v))
			return
		}
		after = n
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		server.WriteError(w, http.StatusInternalServerError, server.CodeInternal, "streaming is not supported here")
		return
	}
	key := runKey{st.Name(), run.ID}
	wake, stop := s.subscribe(key)
	defer stop()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()

	ctx := r.Context()
	poll := time.NewTicker(pollEvery)
	defer poll.Stop()
	beat := time.NewTicker(heartbeatEvery)
	defer beat.Stop()
	var shown store.Status
	for {
		steps, err := st.Steps(ctx, run.ID)
		if err != nil {
			return
		}
		for _, step := range steps {
			if step.Seq <= after {
				continue
			}
			if err := sse.Write(w, "step", strconv.Itoa(step.Seq), step); err != nil {
				return
			}
			after = step.Seq
		}
		if run, err = st.GetRun(ctx, run.ID); err != nil {
			return
		}
		v := s.view(st, run)
		if v.Status != shown {
			shown = v.Status
			if err := sse.Write(w, "status", "", v); err != nil {
				return
			}
		}
		if run.Status.Final() && run.Steps <= after {
			_ = sse.Write(w, "end", "", v)
			flusher.Flush()
			return
		}
		flusher.Flush()
		select {
		case <-ctx.Done():
			return
		case <-s.shutting:
			_ = sse.Write(w, "shutdown", "", v)
			flusher.Flush()
			return
		case <-wake:
		case <-poll.C:
		case <-beat.C:
			if err := sse.KeepAlive(w); err != nil {
				return
			}
		}
	}
}
