package e2b

import (
	"context"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/coderun/coderun/server"
)

// watchEvery is how often a directory watch compares the directory with
// what it was.
const watchEvery = 100 * time.Millisecond

// maxWatchEntries bounds the entries one watch compares.
const maxWatchEntries = 100000

// snapshotEntry is an entry of a watched directory as envd.py reports it:
// [kind (S_IFMT), size, mode, mtime_ns].
type snapshotEntry [4]int64

type snapshot struct {
	Entries   map[string]snapshotEntry `json:"entries"`
	Truncated bool                     `json:"truncated"`
}

// changes are the E2B events that turn snapshot a into b, in name order.
func changes(a, b map[string]snapshotEntry) []map[string]any {
	var names []string
	for n := range a {
		names = append(names, n)
	}
	for n := range b {
		if _, ok := a[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var out []map[string]any
	ev := func(name, typ string) { out = append(out, map[string]any{"name": name, "type": typ}) }
	const dir = 0o040000
	for _, n := range names {
		old, had := a[n]
		cur, has := b[n]
		switch {
		case had && !has:
			ev(n, "EVENT_TYPE_REMOVE")
		case !had && has:
			ev(n, "EVENT_TYPE_CREATE")
		case old[0] != cur[0]:
			ev(n, "EVENT_TYPE_REMOVE")
			ev(n, "EVENT_TYPE_CREATE")
		default:
			if cur[0] != dir && (old[1] != cur[1] || old[3] != cur[3]) {
				ev(n, "EVENT_TYPE_WRITE")
			}
			if old[2] != cur[2] {
				ev(n, "EVENT_TYPE_CHMOD")
			}
		}
	}
	return out
}

// watchDir serves filesystem.Filesystem/WatchDir: the directory (and,
// recursive, those below it) is compared with what it was every
// watchEvery, and each difference sent as E2B's event (create, write,
// remove, chmod; a rename shows as a remove and a create). It runs until
// the client goes away or its Connect-Timeout-Ms passes.
func (s *Service) watchDir(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Path         string `json:"path"`
		Recursive    bool   `json:"recursive"`
		IncludeEntry bool   `json:"includeEntry"`
	}
	st := startStream(w, r, &req)
	if st == nil {
		return
	}
	rel, err := workspacePath(req.Path)
	if err != nil {
		st.end(rpcErrorf(codeInvalidArgument, "%v", err))
		return
	}
	if req.IncludeEntry {
		st.end(rpcErrorf(codeUnimplemented, "watch events with entries (includeEntry) are not served by coderun"))
		return
	}
	ctx := r.Context()
	if ms, err := strconv.ParseInt(r.Header.Get("Connect-Timeout-Ms"), 10, 64); err == nil && ms > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(ms)*time.Millisecond)
		defer cancel()
	}
	b := boxFrom(ctx)
	args := map[string]any{"path": sandboxPath(rel), "recursive": req.Recursive, "limit": maxWatchEntries}
	take := func() (map[string]snapshotEntry, error) {
		var snap snapshot
		if err := b.fs.call(ctx, "snapshot", args, &snap); err != nil {
			return nil, err
		}
		if snap.Truncated {
			return nil, rpcErrorf(codeFailedPrecondition, "%s holds more than %d entries: too many to watch", sandboxPath(rel), maxWatchEntries)
		}
		return snap.Entries, nil
	}
	prev, err := take()
	if err != nil {
		st.end(err)
		return
	}
	if err := st.send(map[string]any{"start": struct{}{}}); err != nil {
		return
	}
	keepalive := time.Duration(0)
	if secs, err := strconv.Atoi(r.Header.Get("Keepalive-Ping-Interval")); err == nil && secs > 0 {
		keepalive = time.Duration(secs) * time.Second
	}
	watching := make(chan struct{})
	defer close(watching)
	go b.keepAlive(watching)
	lastSent := time.Now()
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			switch {
			case r.Context().Err() == nil: // its own timeout
				st.end(&rpcError{Code: "deadline_exceeded", Message: "the watch reached its timeout"})
			case server.ShuttingDown(r.Context()):
				st.end(rpcErrorf(codeUnavailable, "%v: the watch ends", server.ErrShutdown))
			}
			return
		case <-t.C:
		}
		cur, err := take()
		if err != nil {
			if ctx.Err() != nil {
				continue // answered above
			}
			st.end(err)
			return
		}
		for _, ev := range changes(prev, cur) {
			if err := st.send(map[string]any{"filesystem": ev}); err != nil {
				return
			}
			lastSent = time.Now()
		}
		prev = cur
		if keepalive > 0 && time.Since(lastSent) >= keepalive {
			if err := st.send(map[string]any{"keepalive": struct{}{}}); err != nil {
				return
			}
			lastSent = time.Now()
		}
	}
}
