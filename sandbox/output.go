package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
)

// OutputBuffer keeps the first max bytes of a program's output stream and
// calls over on every write that brings more (over is usually a sync.Once
// that stops the program). It never fails a write, so that whoever copies
// the stream into it drains the pipe. Runtimes and wrappers that capture a
// stream themselves use it; it is safe for concurrent use.
type OutputBuffer struct {
	mu        sync.Mutex
	buf       bytes.Buffer
	max       int64
	truncated bool
	over      func()
}

// NewOutputBuffer returns a buffer keeping max bytes and calling over
// past them.
func NewOutputBuffer(max int64, over func()) *OutputBuffer {
	return &OutputBuffer{max: max, over: over}
}

func (c *OutputBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	room := c.max - int64(c.buf.Len())
	if int64(len(p)) > room {
		c.buf.Write(p[:max(room, 0)])
		c.truncated = true
		c.mu.Unlock()
		c.over()
		return len(p), nil
	}
	c.buf.Write(p)
	c.mu.Unlock()
	return len(p), nil
}

// String is what was kept.
func (c *OutputBuffer) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// Truncated reports whether more came than was kept.
func (c *OutputBuffer) Truncated() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.truncated
}

// RunIn runs prog in sb to its end, as a one-shot Run would: it feeds the
// program stdin, keeps up to lim.OutputBytes of each stream (stopping the
// program when one overflows: ReasonOutputLimit), and waits for it. lim
// is the program's limits (prog.Limits is set to them).
func RunIn(ctx context.Context, sb Sandbox, prog Program, lim Limits, stdin []byte) (*Result, error) {
	l := lim
	prog.Limits = &l
	p, err := sb.Start(ctx, prog)
	if err != nil {
		return nil, err
	}
	go func() {
		w := p.Stdin()
		if len(stdin) > 0 {
			_, _ = w.Write(stdin) // a program may exit without reading it
		}
		w.Close()
	}()
	overflow := make(chan struct{})
	var once sync.Once
	stop := func() { once.Do(func() { close(overflow); p.Kill() }) }
	out, errOut := NewOutputBuffer(lim.OutputBytes, stop), NewOutputBuffer(lim.OutputBytes, stop)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _, _ = io.Copy(out, p.Stdout()) }()
	go func() { defer wg.Done(); _, _ = io.Copy(errOut, p.Stderr()) }()
	res := p.Wait(ctx)
	wg.Wait()
	res.Stdout, res.StdoutTruncated = out.String(), out.Truncated()
	res.Stderr, res.StderrTruncated = errOut.String(), errOut.Truncated()
	select {
	case <-overflow:
		res.Reason = ReasonOutputLimit
		res.Error = fmt.Sprintf("output limit of %s reached", FormatBytes(lim.OutputBytes))
	default:
	}
	return res, nil
}
