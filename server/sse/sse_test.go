package sse_test

import (
	"strings"
	"testing"

	"github.com/coderun/coderun/server/sse"
)

func TestWrite(t *testing.T) {
	var b strings.Builder
	if err := sse.Write(&b, "step", "3", map[string]any{"text": "two\nlines"}); err != nil {
		t.Fatal(err)
	}
	if err := sse.Write(&b, "end", "", 1); err != nil {
		t.Fatal(err)
	}
	if err := sse.KeepAlive(&b); err != nil {
		t.Fatal(err)
	}
	want := "id: 3\nevent: step\ndata: {\"text\":\"two\\nlines\"}\n\nevent: end\ndata: 1\n\n: keep-alive\n\n"
	if b.String() != want {
		t.Errorf("got %q\nwant %q", b.String(), want)
	}
	if err := sse.Write(&b, "bad", "", func() {}); err == nil {
		t.Error("a value JSON cannot encode was written")
	}
}
