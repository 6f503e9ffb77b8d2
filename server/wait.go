package server

import (
	"context"
	"sync"
)

// Wait waits for wg until ctx is done; it returns ctx's error if ctx was
// done first. A surface's Close waits so for the work it has started.
func Wait(ctx context.Context, wg *sync.WaitGroup) error {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
