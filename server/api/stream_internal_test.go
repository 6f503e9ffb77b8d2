package api

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// An event stream starts with its headers whichever write comes first (a
// keep-alive or an event), and writes each event as one SSE block.
func TestEventStream(t *testing.T) {
	w := httptest.NewRecorder()
	e := &eventStream{w: w}
	if e.isStarted() {
		t.Fatal("started before any write")
	}
	e.keepAlive()
	e.send("output", map[string]string{"text": "hi"})
	if got := w.Header().Get("Content-Type"); got != "text/event-stream" || w.Code != 200 || !e.isStarted() {
		t.Fatalf("headers %v, status %d", w.Header(), w.Code)
	}
	want := ": keep-alive\n\nevent: output\ndata: {\"text\":\"hi\"}\n\n"
	if got := w.Body.String(); got != want {
		t.Errorf("body %q, want %q", got, want)
	}
	if !w.Flushed {
		t.Error("not flushed")
	}
	if strings.Count(w.Body.String(), "event:") != 1 {
		t.Error("events doubled")
	}
}
