package e2b

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/coderun/coderun/session"
)

// An event is one line of /execute's NDJSON answer, as E2B's code
// interpreter writes it.
type event map[string]any

// mimeKeys maps MIME types to the keys of E2B's result object. Other MIME
// types keep their name as the key (the SDK keeps them in Result.extra).
var mimeKeys = map[string]string{
	"text/plain":             "text",
	"text/html":              "html",
	"text/markdown":          "markdown",
	"image/svg+xml":          "svg",
	"image/png":              "png",
	"image/jpeg":             "jpeg",
	"application/pdf":        "pdf",
	"text/latex":             "latex",
	"application/json":       "json",
	"application/javascript": "javascript",
}

// outputEvents turns one of a cell's outputs into E2B's events (none for
// outputs E2B has no event for: clear_output, display updates).
func outputEvents(o session.Output, now time.Time) []event {
	switch o.Type {
	case session.TypeStream:
		if o.Text == "" {
			return nil
		}
		typ := "stdout"
		if o.Name == "stderr" {
			typ = "stderr"
		}
		return []event{{"type": typ, "text": o.Text, "timestamp": now.UTC().Format(time.RFC3339Nano)}}
	case session.TypeExecuteResult, session.TypeDisplayData:
		if isHelperBundle(o.Data) {
			return nil
		}
		ev := event{"type": "result", "is_main_result": o.Type == session.TypeExecuteResult}
		for mime, v := range o.Data {
			key, ok := mimeKeys[mime]
			if !ok {
				key = mime
			}
			if mime == "application/json" {
				ev[key] = v
				continue
			}
			if s, ok := v.(string); ok {
				ev[key] = s
			} else if b, err := json.Marshal(v); err == nil {
				ev[key] = string(b)
			}
		}
		return []event{ev}
	case session.TypeError:
		return []event{errorEvent(o.Ename, o.Evalue, strings.Join(o.Traceback, "\n"))}
	}
	return nil
}

func errorEvent(name, value, traceback string) event {
	return event{"type": "error", "name": name, "value": value, "traceback": traceback}
}
