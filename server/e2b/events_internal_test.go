package e2b

import (
	"testing"
	"time"

	"github.com/coderun/coderun/session"
)

func TestOutputEvents(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	evs := outputEvents(session.Output{Type: session.TypeStream, Name: "stderr", Text: "warn\n"}, now)
	if len(evs) != 1 || evs[0]["type"] != "stderr" || evs[0]["text"] != "warn\n" || evs[0]["timestamp"] != "2026-01-02T03:04:05Z" {
		t.Errorf("stderr stream: %v", evs)
	}
	evs = outputEvents(session.Output{Type: session.TypeExecuteResult, Data: session.MIMEBundle{
		"text/plain": "42", "image/png": "iVBOR", "application/json": map[string]any{"a": 1.0}, "application/x-custom": "c"}}, now)
	if len(evs) != 1 {
		t.Fatalf("execute_result: %v", evs)
	}
	ev := evs[0]
	if ev["type"] != "result" || ev["is_main_result"] != true || ev["text"] != "42" || ev["png"] != "iVBOR" || ev["application/x-custom"] != "c" {
		t.Errorf("execute_result: %v", ev)
	}
	if j, ok := ev["json"].(map[string]any); !ok || j["a"] != 1.0 {
		t.Errorf("execute_result's JSON is not kept as JSON: %v", ev["json"])
	}
	evs = outputEvents(session.Output{Type: session.TypeDisplayData, Data: session.MIMEBundle{"text/html": "<b>"}}, now)
	if len(evs) != 1 || evs[0]["is_main_result"] != false || evs[0]["html"] != "<b>" {
		t.Errorf("display_data: %v", evs)
	}
	evs = outputEvents(session.Output{Type: session.TypeError, Ename: "ValueError", Evalue: "bad", Traceback: []string{"line 1", "ValueError: bad"}}, now)
	if len(evs) != 1 || evs[0]["name"] != "ValueError" || evs[0]["value"] != "bad" || evs[0]["traceback"] != "line 1\nValueError: bad" {
		t.Errorf("error: %v", evs)
	}
	for _, o := range []session.Output{
		{Type: session.TypeStream, Name: "stdout"},
		{Type: session.TypeClearOutput},
		{Type: session.TypeDisplayData, Data: session.MIMEBundle{helperMIME: "{}"}},
	} {
		if evs := outputEvents(o, now); len(evs) != 0 {
			t.Errorf("%+v gave events %v, want none", o, evs)
		}
	}
}
