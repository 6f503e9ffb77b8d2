package gvisor

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/encoding/protowire"
)

// readWatch is how the host sees a program of a long-lived sandbox
// awaiting input (sandbox.Process.AwaitingInput): which of the sandbox's
// threads are in read(2), and on what. The program's threads are the
// Sentry's tasks, invisible in the host's /proc; the Sentry reports them
// itself through gVisor's runtime monitoring: a trace session (runsc's
// --pod-init-config) whose "remote" sink sends, on a unix socket the host
// listens on, an event as each task enters read(2) (its thread id and the
// path of the descriptor it reads, "host:[N]" for a descriptor the host
// passed in, such as the program's stdin), one as it leaves, and one as a
// task exits.
//
// The Sentry writes each event synchronously, on the task's own goroutine,
// before the system call runs (enter) and before it returns to the program
// (exit): whatever the program does after a read returns, its exit event
// is already in the socket. A check therefore reads every event pending in
// the socket before it answers: a "done" the program forged after its
// read returned is read by the host after that read's exit event was
// written. The sink retries a full socket instead of dropping events (the
// host reads them all the time); if it dropped some (the header counts
// them), every thread is taken to be out of read(2) until it enters one
// again.
//
// The Sentry names the program's stdin "host:[N]", N an inode number of
// its own, which the host does not see. The host learns it from the
// program's first read of a descriptor the host passed in: its
// bootstrap's read of its code on descriptor 3, made before any code runs,
// whose inode the Sentry numbered 3 after stdin's (execFDs). Reads of the
// other descriptors the host passed in (stdout, stderr, ready: write ends;
// the code's pipe, at its end) return at once, but only stdin's counts.
type readWatch struct {
	ln   *net.UnixListener
	path string // the socket

	mu      sync.Mutex
	conn    *net.UnixConn // the current Sentry's, nil before it connects
	raw     syscall.RawConn
	reading map[int32]string // thread id → path of the descriptor of the read(2) it is in
	stdin   map[int32]string // thread id → path of its first read of descriptor 0
	dropped uint32           // events the sink dropped, as its last header said
	err     error            // why the connection's events can no longer be followed
	buf     []byte
	changed chan struct{} // closed (and made again) as events are applied
}

// readSettle is how long inStdinRead waits, for a thread not in a read of
// its stdin, for the Sentry's report of one. An interpreter that just said
// it is done (on its stdout, which the host reads at once) enters its read
// a moment later, and the Sentry's report of it comes later still: through
// the Sentry's scheduling, the socket, and the host's reader of it, on a
// busy host some milliseconds after the claim it confirms. Answered at
// once, the check fails and the session retries (after a ping, another
// round trip through the sandbox): a warm cell took 2 to 17 ms that way.
// Waiting, the check ends as the report comes; a program that is not going
// to read costs the wait.
const readSettle = 5 * time.Millisecond

// Message types of gVisor's seccheck wire protocol (points.proto's
// MessageType) and its header's size.
const (
	msgTaskExit   = 5
	msgSyscallRd  = 9
	traceVersion  = 1 // the wire protocol's version (wire.CurrentVersion)
	traceHdrBytes = 8
)

// The descriptors runsc exec passes a program (exec's --pass-fd): the Sentry
// makes an inode for each, numbered in a row in the order of the
// descriptors (fdimport.Import), so stdin's is its code's (descriptor 3)
// less 3.
const (
	execFDs       = 5 // stdin, stdout, stderr, the code (3), ready (4)
	stdinFromCode = 3
)

// newReadWatch listens on a unix socket at path for the Sentry's events.
func newReadWatch(path string) (*readWatch, error) {
	if len(path) >= len(unix.RawSockaddrUnix{}.Path) {
		return nil, fmt.Errorf("trace socket %s: path longer than a unix socket's (use a shorter state directory)", path)
	}
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		return nil, fmt.Errorf("trace socket: %w", err)
	}
	ln.SetUnlinkOnClose(true)
	return &readWatch{ln: ln, path: path, buf: make([]byte, 64<<10), changed: make(chan struct{})}, nil
}

// initConfig is the runsc --pod-init-config file that has the Sentry send
// w its events.
func (w *readWatch) initConfig() ([]byte, error) {
	thread := []string{"thread_id"}
	return json.Marshal(map[string]any{"trace_session": map[string]any{
		"name": "Default",
		"points": []map[string]any{
			{"name": "syscall/read/enter", "optional_fields": []string{"fd_path"}, "context_fields": thread},
			{"name": "syscall/read/exit", "context_fields": thread},
			{"name": "sentry/task_exit", "context_fields": thread},
		},
		"sinks": []map[string]any{{"name": "remote", "config": map[string]any{
			"endpoint": w.path,
			// A full socket is retried (every 1 ms at most) rather than
			// an event dropped: the host reads them as they come.
			"retries":     1 << 30,
			"backoff":     "25us",
			"backoff_max": "1ms",
		}}},
	}})
}

// accept waits for the next Sentry's connection and answers its
// handshake; start must run the Sentry, which connects while it boots.
// What was known of the previous Sentry's threads is forgotten.
func (w *readWatch) accept(ctx context.Context, start func() error) error {
	type accepted struct {
		c   *net.UnixConn
		err error
	}
	got := make(chan accepted, 1)
	_ = w.ln.SetDeadline(time.Time{})
	go func() {
		c, err := w.ln.AcceptUnix()
		if err == nil {
			if err = handshake(c); err != nil {
				c.Close()
			}
		}
		got <- accepted{c, err}
	}()
	err := start()
	if err == nil {
		// The Sentry connected as it booted: the answer is there, or will
		// be in a moment.
		t := time.NewTimer(10 * time.Second)
		defer t.Stop()
		select {
		case a := <-got:
			if a.err != nil {
				return fmt.Errorf("the Sentry's trace connection: %w", a.err)
			}
			return w.follow(a.c)
		case <-t.C:
			err = errors.New("the Sentry did not connect its trace session")
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	_ = w.ln.SetDeadline(time.Now())
	if a := <-got; a.c != nil {
		a.c.Close()
	}
	return err
}

// handshake answers the sink's handshake (a Handshake message, its field
// 1 the version) with the host's.
func handshake(c *net.UnixConn) error {
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	defer c.SetDeadline(time.Time{})
	buf := make([]byte, 1024)
	n, err := c.Read(buf)
	if err != nil {
		return fmt.Errorf("handshake: %w", err)
	}
	v, err := varintField(buf[:n], 1)
	if err != nil || v < traceVersion {
		return fmt.Errorf("handshake: the sink's version (%d) is not %d: %v", v, traceVersion, err)
	}
	if _, err := c.Write(protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), traceVersion)); err != nil {
		return fmt.Errorf("handshake: %w", err)
	}
	return nil
}

// follow makes c the connection events are read from, and reads them as
// they come until it ends.
func (w *readWatch) follow(c *net.UnixConn) error {
	raw, err := c.SyscallConn()
	if err != nil {
		c.Close()
		return err
	}
	w.mu.Lock()
	old := w.conn
	w.conn, w.raw, w.err, w.dropped = c, raw, nil, 0
	w.reading, w.stdin = map[int32]string{}, map[int32]string{}
	w.mu.Unlock()
	if old != nil {
		// Closed without w.mu: Close waits for the old connection's
		// reader, whose callback takes w.mu to see it is not current.
		old.Close()
	}
	go func() {
		_ = raw.Read(func(fd uintptr) bool {
			w.mu.Lock()
			defer w.mu.Unlock()
			if w.conn != c {
				return true
			}
			return w.drainFD(int(fd))
		})
	}()
	return nil
}

// inStdinRead reports whether thread tid is in read(2) on its stdin, as
// of every event the Sentry sent until now; if it is not, it waits up to
// settle for the events that put it there, and answers as of the last.
func (w *readWatch) inStdinRead(tid int32, settle time.Duration) (bool, error) {
	var timeout <-chan time.Time
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		if w.conn == nil {
			return false, errors.New("the Sentry's trace session is not connected")
		}
		if w.err == nil {
			if err := w.raw.Control(func(fd uintptr) { w.drainFD(int(fd)) }); err != nil {
				w.err = err
			}
		}
		if w.err != nil {
			return false, fmt.Errorf("following the Sentry's reads: %w", w.err)
		}
		path, ok := w.reading[tid]
		if ok && path == w.stdin[tid] {
			return true, nil
		}
		if settle <= 0 {
			return false, nil
		}
		if timeout == nil {
			t := time.NewTimer(settle)
			defer t.Stop()
			timeout = t.C
		}
		changed := w.changed
		w.mu.Unlock()
		select {
		case <-changed:
			w.mu.Lock()
		case <-timeout:
			w.mu.Lock()
			settle = 0 // one last look
		}
	}
}

// drainFD reads and applies every event pending on fd, and reports whether
// the connection has ended. w.mu is held.
func (w *readWatch) drainFD(fd int) (ended bool) {
	applied := false
	defer func() {
		if applied || w.err != nil {
			close(w.changed)
			w.changed = make(chan struct{})
		}
	}()
	for w.err == nil {
		n, _, flags, _, err := unix.Recvmsg(fd, w.buf, nil, unix.MSG_DONTWAIT)
		switch {
		case errors.Is(err, unix.EAGAIN):
			return false
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			w.err = err
		case n == 0:
			w.err = errors.New("the Sentry closed its trace session")
		case flags&unix.MSG_TRUNC != 0:
			w.err = fmt.Errorf("an event longer than %d bytes", len(w.buf))
		default:
			if err := w.apply(w.buf[:n]); err != nil {
				w.err = err
			}
			applied = true
		}
	}
	return true
}

// apply updates what is known of the threads' reads with one message.
func (w *readWatch) apply(msg []byte) error {
	if len(msg) < traceHdrBytes {
		return fmt.Errorf("an event of %d bytes, shorter than its header", len(msg))
	}
	size := int(binary.LittleEndian.Uint16(msg[0:]))
	typ := binary.LittleEndian.Uint16(msg[2:])
	dropped := binary.LittleEndian.Uint32(msg[4:])
	if size < traceHdrBytes || size > len(msg) {
		return fmt.Errorf("an event's header of %d bytes in %d", size, len(msg))
	}
	if dropped != w.dropped {
		// Events were lost: an exit among them would leave a thread
		// seen reading that is not.
		w.dropped = dropped
		clear(w.reading)
	}
	switch typ {
	case msgSyscallRd:
		ev, err := parseRead(msg[size:])
		if err != nil {
			return err
		}
		if ev.exit {
			delete(w.reading, ev.tid)
			return nil
		}
		w.reading[ev.tid] = ev.path
		if _, ok := w.stdin[ev.tid]; !ok {
			if ino, ok := hostIno(ev.path); ok {
				// The thread's first read of a descriptor the host passed
				// in: the bootstrap's of its code, on descriptor 3.
				w.stdin[ev.tid] = ""
				if ino >= execFDs-stdinFromCode {
					w.stdin[ev.tid] = fmt.Sprintf("host:[%d]", ino-stdinFromCode)
				}
			}
		}
	case msgTaskExit:
		ctx, err := bytesField(msg[size:], 1)
		if err != nil {
			return fmt.Errorf("a task's exit: %w", err)
		}
		tid, err := varintField(ctx, 2)
		if err != nil {
			return fmt.Errorf("a task's exit: %w", err)
		}
		delete(w.reading, int32(tid))
		delete(w.stdin, int32(tid))
	}
	return nil
}

// hostIno is the Sentry's inode number of a descriptor the host passed
// in, from its path ("host:[N]").
func hostIno(path string) (uint64, bool) {
	n, ok := strings.CutPrefix(path, "host:[")
	if n, ok = strings.CutSuffix(n, "]"); !ok {
		return 0, false
	}
	ino, err := strconv.ParseUint(n, 10, 64)
	return ino, err == nil
}

// readEvent is a read(2) point: points.proto's Read message.
type readEvent struct {
	tid  int32
	fd   int64
	path string
	exit bool
}

// parseRead decodes a Read message: context_data (1, its thread_id 2),
// exit (2), fd (4), fd_path (5).
func parseRead(b []byte) (readEvent, error) {
	var ev readEvent
	err := eachField(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		switch {
		case num == 1 && typ == protowire.BytesType:
			ctx, _ := protowire.ConsumeBytes(v)
			tid, err := varintField(ctx, 2)
			if err != nil {
				return fmt.Errorf("its thread: %w", err)
			}
			ev.tid = int32(tid)
		case num == 2 && typ == protowire.BytesType:
			ev.exit = true
		case num == 4 && typ == protowire.VarintType:
			x, _ := protowire.ConsumeVarint(v)
			ev.fd = int64(x)
		case num == 5 && typ == protowire.BytesType:
			x, _ := protowire.ConsumeBytes(v)
			ev.path = string(x)
		}
		return nil
	})
	if err != nil {
		return ev, fmt.Errorf("a read event: %w", err)
	}
	return ev, nil
}

// varintField is the value of the varint field num of message b (0 when
// absent, as protobuf's proto3 default).
func varintField(b []byte, num protowire.Number) (uint64, error) {
	var out uint64
	err := eachField(b, func(n protowire.Number, typ protowire.Type, v []byte) error {
		if n != num || typ != protowire.VarintType {
			return nil
		}
		x, m := protowire.ConsumeVarint(v)
		if m < 0 {
			return protowire.ParseError(m)
		}
		out = x
		return nil
	})
	return out, err
}

// bytesField is the value of the length-delimited field num of message b.
func bytesField(b []byte, num protowire.Number) ([]byte, error) {
	var out []byte
	err := eachField(b, func(n protowire.Number, typ protowire.Type, v []byte) error {
		if n != num || typ != protowire.BytesType {
			return nil
		}
		x, m := protowire.ConsumeBytes(v)
		if m < 0 {
			return protowire.ParseError(m)
		}
		out = x
		return nil
	})
	return out, err
}

// eachField calls f with each field of message b, v its encoded value.
func eachField(b []byte, f func(num protowire.Number, typ protowire.Type, v []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return protowire.ParseError(m)
		}
		if err := f(num, typ, b[:m]); err != nil {
			return err
		}
		b = b[m:]
	}
	return nil
}

// close stops following events and removes the socket.
func (w *readWatch) close() error {
	w.mu.Lock()
	c := w.conn
	w.conn = nil
	w.mu.Unlock()
	if c != nil {
		// Not under w.mu: Close waits for the reader follow started,
		// whose callback takes w.mu (and then sees c is not current).
		c.Close()
	}
	err := w.ln.Close()
	if errors.Is(err, os.ErrClosed) {
		err = nil
	}
	return err
}
