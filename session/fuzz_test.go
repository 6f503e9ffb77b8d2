package session

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// Fuzz targets for what the host reads from the sandbox (the bash driver's
// marked streams, the Python driver's JSON lines) and from users (notebook
// files). `go test` runs their seeds and testdata/fuzz; `go test -fuzz
// FuzzX` looks for more. Each checks properties, not only the absence of
// a panic.

// fuzzMarker is the marker the scanner fuzz target looks for: a short
// nonce, so that the fuzzer meets it often; the real one is 32 hex digits
// and a colon, which the scanner treats the same way.
const fuzzMarker = "7f:"

// scanItem is one thing a scanner reported: text, or a marker (mark set).
type scanItem struct {
	text string
	mark bool
}

// transcript adds an item, merging consecutive text.
func transcript(items []scanItem, it scanItem) []scanItem {
	if !it.mark && len(items) > 0 && !items[len(items)-1].mark {
		items[len(items)-1].text += it.text
		return items
	}
	return append(items, it)
}

// scanWhole is the marker scanner's specification, on the whole input at
// once: a marker is the nonce and a valid marker body of at most
// maxMarkerLine bytes up to a newline; any other nonce is text; text between
// markers is decoded as UTF-8 with replacement.
func scanWhole(in, marker []byte) []scanItem {
	var items []scanItem
	var seg []byte // text since the last marker
	for {
		k := bytes.Index(in, marker)
		if k < 0 {
			seg = append(seg, in...)
			break
		}
		rest := in[k+len(marker):]
		j := bytes.IndexByte(rest, '\n')
		if j < 0 || j > maxMarkerLine || !validMarker(rest[:j]) {
			seg = append(seg, in[:k+len(marker)]...)
			in = rest
			continue
		}
		seg = append(seg, in[:k]...)
		if len(seg) > 0 {
			items = transcript(items, scanItem{text: toValidUTF8(seg)})
		}
		seg = nil
		items = append(items, scanItem{text: string(rest[:j]), mark: true})
		in = rest[j+1:]
	}
	if len(seg) > 0 {
		items = transcript(items, scanItem{text: toValidUTF8(seg)})
	}
	return items
}

// scanChunks feeds in to a markerScanner in reads whose sizes cycle
// through sizes (each at least 1).
func scanChunks(t *testing.T, in, marker, sizes []byte) []scanItem {
	sc := &markerScanner{marker: marker}
	var items []scanItem
	text := func(s string) {
		if s == "" {
			t.Fatal("the scanner reported empty text")
		}
		items = transcript(items, scanItem{text: s})
	}
	mark := func(m string) { items = append(items, scanItem{text: m, mark: true}) }
	for i := 0; len(in) > 0; i++ {
		n := len(in)
		if len(sizes) > 0 {
			n = min(n, int(sizes[i%len(sizes)])+1)
		}
		sc.feed(in[:n], text, mark)
		in = in[n:]
		// Held back: at most a cut marker and a cut character.
		if held := len(sc.buf) + len(sc.carry); held > len(marker)+maxMarkerLine+utf8.UTFMax {
			t.Fatalf("the scanner holds back %d bytes: %q", held, sc.buf)
		}
	}
	sc.flush(text)
	return items
}

func FuzzMarkerScanner(f *testing.F) {
	const m = fuzzMarker
	for _, s := range []string{
		"",
		"plain text\n",
		"héllo " + m + "S:1:ab\nwörld\xff " + m + " not a marker " + m + "Dx\ntail€" + m + "D:1:ab:0\nafter",
		m + "R\n" + m + "R\n",
		"a\xe2\x82" + m + "R\n\xac b",
		m + strings.Repeat("0", maxMarkerLine) + "\n" + m + strings.Repeat("0", maxMarkerLine+1) + "\n",
		"7" + "f" + ":" + "7f:R\n",
		m + "S:1:" + m + "D:1:2:3\n",
		"x" + m,
		"\xf0\x9f\x98" + m + "\n",
	} {
		f.Add([]byte(s), []byte{0})
		f.Add([]byte(s), []byte{2, 0, 5})
	}
	f.Fuzz(func(t *testing.T, in, sizes []byte) {
		marker := []byte(fuzzMarker)
		want := scanWhole(in, marker)
		got := scanChunks(t, in, marker, sizes)
		if !slices.Equal(got, want) {
			t.Fatalf("reads of %v:\n got %+v\nwant %+v", sizes, got, want)
		}
		// The text and the marker lines, put back together, are the input
		// (decoded as UTF-8 with replacement).
		var b strings.Builder
		for _, it := range got {
			if it.mark {
				b.WriteString(fuzzMarker + it.text + "\n")
			} else {
				b.WriteString(it.text)
			}
		}
		if b.String() != toValidUTF8(in) {
			t.Fatalf("reassembled %q, input %q", b.String(), in)
		}
	})
}

// FuzzReadLine checks the bounded line reader that both the Python
// driver's messages and the bash markers' host side rely on: every line up
// to max bytes comes back whole, in order; longer ones are consumed and
// reported; nothing else is lost.
func FuzzReadLine(f *testing.F) {
	for _, s := range []string{"", "a\n", "a\nbb\nccc", strings.Repeat("x", 40) + "\nshort\n", "\n\n\n", "no newline"} {
		f.Add([]byte(s), uint8(4))
		f.Add([]byte(s), uint8(30))
	}
	f.Fuzz(func(t *testing.T, in []byte, max uint8) {
		limit := int(max)
		br := bufio.NewReaderSize(bytes.NewReader(in), 16) // the smallest buffer: long lines take several reads
		var want []string
		for rest := in; len(rest) > 0; {
			n := bytes.IndexByte(rest, '\n') + 1
			if n == 0 {
				n = len(rest)
			}
			line := rest[:n]
			rest = rest[n:]
			if len(line) > limit {
				want = append(want, "!too long")
			} else {
				want = append(want, string(line))
			}
		}
		var got []string
		for len(got) <= len(in) {
			line, err := readLine(br, limit)
			if errors.Is(err, errLineTooLong) {
				got = append(got, "!too long")
				continue
			}
			if err != nil {
				break
			}
			got = append(got, string(line))
		}
		// A last line past the limit without a newline ends the input and
		// is dropped, not reported: the reader waits for its end.
		if len(want) > 0 && want[len(want)-1] == "!too long" && !bytes.HasSuffix(in, []byte("\n")) {
			want = want[:len(want)-1]
		}
		if !slices.Equal(got, want) {
			t.Fatalf("limit %d: got %q, want %q", limit, got, want)
		}
	})
}

// FuzzPythonMessages feeds the host's reader of the Python driver's
// output: every line gives at most one event, unreadable ones a protocol
// event that quotes them briefly and in valid UTF-8, and every output
// event is an output the notebook writer can write and read back.
func FuzzPythonMessages(f *testing.F) {
	for _, s := range []string{
		`{"type":"ready","protocol":1,"version":"3.11.2","ipython":"8.5.0","init_ms":12.5}`,
		`{"type":"ready","error":"ModuleNotFoundError: No module named 'x'"}`,
		`{"type":"started","id":7,"execution_count":3}`,
		`{"type":"stream","id":7,"name":"stdout","text":"hi\n"}`,
		`{"type":"stream","id":7,"name":"other","text":"hi\n"}`,
		`{"type":"display_data","id":7,"data":{"image/png":"iVBORw0KGgo=","text/plain":"<Figure>"},"metadata":{},"transient":{"display_id":"d1"},"update":true}`,
		`{"type":"execute_result","id":7,"execution_count":3,"data":{"text/plain":"42","application/json":{"a":[1,2]}},"metadata":{}}`,
		`{"type":"error","id":7,"ename":"ZeroDivisionError","evalue":"division by zero","traceback":["a\nb","c"]}`,
		`{"type":"clear_output","id":7,"wait":true}`,
		`{"type":"done","id":7,"status":"ok","execution_count":3,"truncated":false,"exiting":false}`,
		`not json` + "\xff",
		`{"type":""}`,
		`{"type":"display_data","data":{"text/plain":["a","b"]},"transient":{"display_id":5}}`,
		`[1,2]`,
	} {
		f.Add([]byte(s + "\n"))
	}
	f.Add([]byte("{\"type\":\"started\",\"id\":1}\n\n{\"type\":\"done\",\"id\":1,\"status\":\"error\"}"))
	f.Fuzz(func(t *testing.T, in []byte) {
		var events []event
		emit := func(ev event) { events = append(events, ev) }
		(&pythonDriver{}).read(bytes.NewReader(in), strings.NewReader(""), emit, newTail(64))
		if lines := bytes.Count(in, []byte("\n")) + 1; len(events) > lines {
			t.Fatalf("%d events from %d lines", len(events), lines)
		}
		for _, ev := range events {
			switch ev.kind {
			case evProtocol:
				if !utf8.ValidString(ev.err) || len(ev.err) > 300 {
					t.Fatalf("protocol error of %d bytes: %q", len(ev.err), ev.err)
				}
			case evOutput:
				checkOutputRoundTrip(t, ev.out)
			case evReady, evStarted, evDone:
			default:
				t.Fatalf("event of kind %d", ev.kind)
			}
		}
	})
}

// checkOutputRoundTrip checks that o writes as JSON that reads back as an
// output that writes the same way.
func checkOutputRoundTrip(t *testing.T, o Output) {
	t.Helper()
	first, err := json.Marshal(o)
	if err != nil {
		t.Fatalf("output %+v does not write: %v", o, err)
	}
	var back Output
	if err := json.Unmarshal(first, &back); err != nil {
		t.Fatalf("output %s does not read back: %v", first, err)
	}
	second, err := json.Marshal(back)
	if err != nil {
		t.Fatalf("output %+v, read back, does not write: %v", back, err)
	}
	// A bundle's list of lines reads back joined, as nbformat means it:
	// from then on, it writes the same.
	var again Output
	if err := json.Unmarshal(second, &again); err != nil {
		t.Fatal(err)
	}
	if third, _ := json.Marshal(again); !bytes.Equal(second, third) {
		t.Fatalf("output writes as %s, then as %s", second, third)
	}
	if back.Type != o.Type || back.Text != o.Text || back.Name != o.Name || back.Ename != o.Ename || back.Evalue != o.Evalue {
		t.Fatalf("output %+v read back as %+v", o, back)
	}
}

// clip never cuts a character in two (FuzzPythonMessages found an
// unreadable line quoted with half a character at the cut).
func TestClipKeepsCharacters(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 3, "abc"},
		{"abcd", 3, "abc…"},
		{"ab€d", 3, "ab…"},
		{"ab€d", 4, "ab…"},
		{"ab€d", 5, "ab€…"},
		{"€€", 1, "…"},
		{"\xff\xff\xff", 2, "\xff\xff…"},
	} {
		if got := clip(c.s, c.n); got != c.want {
			t.Errorf("clip(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}
