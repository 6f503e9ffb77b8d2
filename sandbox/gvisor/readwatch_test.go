package gvisor

import (
	"encoding/binary"
	"net"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// event encodes a message as the Sentry's remote sink sends it: the
// header (its size, the message type, the events dropped so far), then
// the message.
func event(typ uint16, dropped uint32, msg []byte) []byte {
	b := make([]byte, traceHdrBytes, traceHdrBytes+len(msg))
	binary.LittleEndian.PutUint16(b[0:], traceHdrBytes)
	binary.LittleEndian.PutUint16(b[2:], typ)
	binary.LittleEndian.PutUint32(b[4:], dropped)
	return append(b, msg...)
}

func contextData(tid int32) []byte {
	ctx := protowire.AppendVarint(protowire.AppendTag(nil, 2, protowire.VarintType), uint64(tid))
	return protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), ctx)
}

// readEnter and readExit are a Read point's messages.
func readEnter(tid int32, fd int64, path string) []byte {
	b := contextData(tid)
	b = protowire.AppendVarint(protowire.AppendTag(b, 4, protowire.VarintType), uint64(fd))
	return protowire.AppendBytes(protowire.AppendTag(b, 5, protowire.BytesType), []byte(path))
}

func readExit(tid int32) []byte {
	exit := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 1)
	b := contextData(tid)
	return protowire.AppendBytes(protowire.AppendTag(b, 2, protowire.BytesType), exit)
}

func TestReadWatchApply(t *testing.T) {
	w := &readWatch{reading: map[int32]string{}, stdin: map[int32]string{}}
	step := func(typ uint16, dropped uint32, msg []byte) {
		t.Helper()
		if err := w.apply(event(typ, dropped, msg)); err != nil {
			t.Fatal(err)
		}
	}
	in := func(tid int32) bool { p, ok := w.reading[tid]; return ok && p == w.stdin[tid] }
	const main = 7
	// Startup reads of the root's files, then the bootstrap's of its code
	// on descriptor 3 (the Sentry's inode 8: stdin's is 5).
	step(msgSyscallRd, 0, readEnter(main, 5, "/usr/lib/python3.11/os.py"))
	step(msgSyscallRd, 0, readExit(main))
	step(msgSyscallRd, 0, readEnter(main, 3, "host:[8]"))
	step(msgSyscallRd, 0, readExit(main))
	if in(main) || w.stdin[main] != "host:[5]" {
		t.Fatalf("after the code's read: stdin %q, reading %v", w.stdin[main], w.reading)
	}
	// Reads of another host descriptor, or of a pipe of its own on
	// descriptor 0, are not reads of stdin.
	for _, ev := range [][]byte{readEnter(main, 1, "host:[6]"), readEnter(main, 0, "pipe:[3]")} {
		step(msgSyscallRd, 0, ev)
		if in(main) {
			t.Fatalf("%x: seen reading stdin", ev)
		}
		step(msgSyscallRd, 0, readExit(main))
	}
	// Another thread's read of stdin is not the main thread's.
	step(msgSyscallRd, 0, readEnter(main+1, 10, "host:[5]"))
	if in(main) {
		t.Fatal("another thread's read seen as the main thread's")
	}
	step(msgSyscallRd, 0, readEnter(main, 10, "host:[5]"))
	if !in(main) {
		t.Fatal("a read of stdin on a copy of descriptor 0 not seen")
	}
	step(msgSyscallRd, 0, readExit(main))
	if in(main) {
		t.Fatal("seen reading after the read returned")
	}
	// Lost events: every thread is taken to be out of its read.
	step(msgSyscallRd, 0, readEnter(main, 10, "host:[5]"))
	step(msgSyscallRd, 1, readEnter(main+2, 4, "/etc/passwd"))
	if in(main) {
		t.Fatal("seen reading after events were lost")
	}
	// A task's exit forgets it: a thread that reuses its id learns its
	// stdin again.
	step(msgSyscallRd, 1, readEnter(main, 10, "host:[5]"))
	step(msgTaskExit, 1, contextData(main))
	if _, ok := w.stdin[main]; ok || in(main) {
		t.Fatal("an exited thread is still known")
	}
	// A first host read that is not of descriptor 3's inode or later
	// names no stdin.
	step(msgSyscallRd, 1, readEnter(main, 0, "host:[1]"))
	if w.stdin[main] != "" || in(main) {
		t.Fatalf("stdin %q from host:[1]", w.stdin[main])
	}
}

func TestReadWatchBadEvents(t *testing.T) {
	w := &readWatch{reading: map[int32]string{}, stdin: map[int32]string{}}
	for _, msg := range [][]byte{
		{1, 2, 3},                                 // shorter than a header
		event(msgSyscallRd, 0, nil)[:7],           // likewise
		append(event(msgSyscallRd, 0, nil), 0xff), // a bad tag
		func() []byte { b := event(msgSyscallRd, 0, nil); b[0] = 200; return b }(), // header past the end
	} {
		if err := w.apply(msg); err == nil {
			t.Errorf("%x: no error", msg)
		}
	}
}

// followedWatch is a read watch following a connection as the Sentry's,
// and the Sentry's end of it (closed when the test ends).
func followedWatch(t *testing.T) (*readWatch, *net.UnixConn) {
	t.Helper()
	w, err := newReadWatch(filepath.Join(t.TempDir(), "trace"))
	if err != nil {
		t.Fatal(err)
	}
	client, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: w.path, Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	c, err := w.ln.AcceptUnix()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.follow(c); err != nil {
		t.Fatal(err)
	}
	return w, client
}

// TestReadWatchCloseWhileEventsArrive: closing the watch while an event
// arrives returns. It hung (CI, 25 minutes): close held the watch's lock
// while closing the connection, which waits for the connection's reader,
// whose callback was waiting for that lock. The test lines the two up:
// close waits for the lock first, then an event wakes the reader, which
// waits behind it.
func TestReadWatchCloseWhileEventsArrive(t *testing.T) {
	w, client := followedWatch(t)
	w.mu.Lock()
	closed := make(chan error, 1)
	go func() { closed <- w.close() }()
	time.Sleep(50 * time.Millisecond) // close waits for w.mu
	if _, err := client.Write(event(msgSyscallRd, 0, readEnter(7, 0, "host:[5]"))); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the reader's callback waits behind it
	w.mu.Unlock()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("close did not return while an event arrived")
	}
}

// TestReadWatchSettles: a check made before the Sentry's report of a read
// of stdin has come (the interpreter said it is done, and reads a moment
// later) waits for it, and answers true as it comes; a thread that does not
// read is answered false after the wait. Answered at once, the first
// check failed, and a session's cell took the retries' and a ping's time.
func TestReadWatchSettles(t *testing.T) {
	w, client := followedWatch(t)
	defer w.close()
	send := func(msg []byte) {
		if _, err := client.Write(event(msgSyscallRd, 0, msg)); err != nil {
			t.Error(err)
		}
	}
	const main = 7
	send(readEnter(main, 3, "host:[8]")) // the bootstrap's read of its code
	send(readExit(main))
	if ok, err := w.inStdinRead(main, 0); ok || err != nil {
		t.Fatalf("before any read of stdin: %v, %v", ok, err)
	}
	go func() {
		time.Sleep(30 * time.Millisecond)
		send(readEnter(main, 0, "host:[5]"))
	}()
	start := time.Now()
	ok, err := w.inStdinRead(main, 5*time.Second)
	if !ok || err != nil {
		t.Fatalf("the read of stdin reported after the check began: %v, %v", ok, err)
	}
	if d := time.Since(start); d < 25*time.Millisecond || d > 4*time.Second {
		t.Errorf("answered after %v: want as the report came (30 ms)", d)
	}
	send(readExit(main))
	time.Sleep(20 * time.Millisecond)
	start = time.Now()
	if ok, err := w.inStdinRead(main, 50*time.Millisecond); ok || err != nil {
		t.Fatalf("after the read returned: %v, %v", ok, err)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("a thread out of read answered after %v: want after the 50 ms wait", d)
	}
}
