package session

import (
	"fmt"
	"strings"
	"testing"
)

// The marker scanner gives the same text and markers however the stream
// is cut into reads.
func TestMarkerScanner(t *testing.T) {
	const nonce = "0123456789abcdef"
	stream := "héllo " + nonce + ":S:1\nwörld\xff " + nonce + " not a marker " + nonce + ":Dx\n" +
		"tail€" + nonce + ":D:1:0\n" + "after"
	wantText := "héllo wörld\ufffd " + nonce + " not a marker " + nonce + ":Dx\ntail€after"
	wantMarks := "S:1|D:1:0"
	for size := 1; size <= len(stream); size++ {
		sc := &markerScanner{marker: []byte(nonce + ":")}
		var text strings.Builder
		var marks []string
		emit := func(s string) { text.WriteString(s) }
		for i := 0; i < len(stream); i += size {
			sc.feed([]byte(stream[i:min(i+size, len(stream))]), emit, func(m string) { marks = append(marks, m) })
		}
		sc.flush(emit)
		if text.String() != wantText || strings.Join(marks, "|") != wantMarks {
			t.Fatalf("reads of %d bytes: text %q, marks %v", size, text.String(), marks)
		}
	}
}

// Text is not held back unless it may be the start of a marker or of a
// character.
func TestMarkerScannerStreams(t *testing.T) {
	sc := &markerScanner{marker: []byte("abc:")}
	var got []string
	emit := func(s string) { got = append(got, s) }
	sc.feed([]byte("line\n"), emit, nil)
	sc.feed([]byte("x a"), emit, nil)
	sc.feed([]byte("\xe2\x82"), emit, nil)
	if strings.Join(got, "|") != "line\n|x |a" { // "a" is held until it cannot start "abc:"
		t.Fatalf("got %q", got)
	}
}

func TestBashRequestQuoting(t *testing.T) {
	d := newBashDriver(nil)
	req, err := d.request(3, "echo 'hi' \\ \"$x\" !\n\xff")
	if err != nil {
		t.Fatal(err)
	}
	want := `__cr_read 3 ` + d.key + ` $'echo \x27hi\x27 \x5c "$x" \x21\x0a\xff' && eval "$__cr_code" </dev/null` + "\n"
	if len(d.key) != 16 {
		t.Fatalf("key %q", d.key)
	}
	if string(req) != want {
		t.Fatalf("request %q\nwant    %q", req, want)
	}
}

// A cell's start and end count only with the key of the cell last
// requested: a background job of an earlier cell knows only earlier keys.
func TestBashMarkerKeys(t *testing.T) {
	d := newBashDriver(nil)
	if _, err := d.request(1, "true"); err != nil {
		t.Fatal(err)
	}
	old := d.key
	if _, err := d.request(2, "true"); err != nil {
		t.Fatal(err)
	}
	var got []string
	emit := func(ev event) { got = append(got, fmt.Sprintf("%d:%d", ev.kind, ev.id)) }
	for _, m := range []string{"S:2:" + old, "S:1:" + old, "S:2:", "D:2:" + old + ":0", "S:2:" + d.key} {
		d.marker(0, m, emit)
		d.marker(1, m, emit)
	}
	d.marker(0, "D:2:"+old+":0", emit)
	d.marker(1, "D:2:"+d.key+":0", emit)
	d.marker(0, "D:2:"+d.key+":0", emit)
	want := fmt.Sprintf("%d:2|%d:2", evStarted, evDone)
	if strings.Join(got, "|") != want {
		t.Fatalf("events %v, want %s", got, want)
	}
}
