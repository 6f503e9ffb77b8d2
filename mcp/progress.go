package mcp

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/coderun/coderun/agent"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// heartbeat is how often a long execution says it is still running.
const heartbeat = 2 * time.Second

// progress sends a request's progress notifications, when the client
// asked for them (a progress token in the request's _meta): one each time
// output arrives, and one every heartbeat while nothing does. The count
// only grows, as the protocol requires.
type progress struct {
	ss    *sdk.ServerSession
	token any
	ctx   context.Context

	mu    sync.Mutex
	count float64
	last  time.Time
}

// newProgress returns the request's progress reporter (a no-op without a
// token) and starts its heartbeat, which stops with the returned function.
func newProgress(ctx context.Context, req *sdk.CallToolRequest, what string) (*progress, func()) {
	p := &progress{ctx: ctx}
	if req == nil || req.Params == nil || req.Session == nil {
		return p, func() {}
	}
	if p.token = req.Params.GetProgressToken(); p.token == nil {
		return p, func() {}
	}
	p.ss = req.Session
	start := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(heartbeat)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				p.mu.Lock()
				quiet := now.Sub(p.last) >= heartbeat
				p.mu.Unlock()
				if quiet {
					p.send(ctx, fmt.Sprintf("%s: running for %s", what, now.Sub(start).Round(time.Second)))
				}
			}
		}
	}()
	return p, func() { cancel(); <-done }
}

// send notifies the client, if it asked; a failure to notify is not the
// execution's failure.
func (p *progress) send(ctx context.Context, msg string) {
	if p.token == nil {
		return
	}
	p.mu.Lock()
	p.count++
	n := p.count
	p.last = time.Now()
	p.mu.Unlock()
	_ = p.ss.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: p.token, Progress: n, Message: clip(msg, 200)})
}

// clip shortens s to at most n bytes on one line, cut between characters.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// observe reports an agent's step.
func (p *progress) observe(e agent.Event) {
	p.send(p.ctx, e.Step.Summary)
}
