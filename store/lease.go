package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// Owner names whoever drives a run: a process, or one run inside a
// process. It is an opaque token, unique per call of [NewOwner]; the
// store trusts only the lease that comes with it, never what it says.
type Owner string

// NewOwner returns a new owner token: "host/pid/random", the host and pid
// only for a person reading it.
func NewOwner() Owner {
	host, _ := os.Hostname()
	var b [6]byte
	_, _ = rand.Read(b[:])
	return Owner(fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:])))
}

// Renewer extends leases: what [KeepAlive] needs of a [Tenant].
type Renewer interface {
	Renew(ctx context.Context, id string, owner Owner) (time.Time, error)
}

// KeepAlive renews owner's lease on run id in the background, each time a
// third of the lease is left to run (until is when the current lease
// expires), until stop is called or ctx is done, or the lease is lost
// ([ErrNotOwner], [ErrNotFound]: it stops renewing). A failing renewal is
// retried sooner. stop waits for the renewing goroutine to end.
func KeepAlive(ctx context.Context, r Renewer, id string, owner Owner, until time.Time) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		lease := time.Until(until)
		wait := lease / 3
		for {
			t := time.NewTimer(max(wait, 10*time.Millisecond))
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			next, err := r.Renew(ctx, id, owner)
			switch {
			case err == nil:
				lease = time.Until(next)
				wait = lease / 3
			case errors.Is(err, ErrNotOwner), errors.Is(err, ErrNotFound), errors.Is(err, ErrEnded), ctx.Err() != nil:
				return
			default:
				// A busy or unreachable database: try again soon, while
				// the lease still runs.
				wait = lease / 10
			}
		}
	}()
	return func() {
		cancel()
		wg.Wait()
	}
}
