package e2b

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/coderun/coderun/sandbox"
)

// errOneAtATime says the runtime cannot run a sandbox's contexts and
// commands side by side.
var errOneAtATime = errors.New("this runtime runs one program at a time in a sandbox: E2B's further contexts, commands and file operations need one whose sandboxes run programs side by side (sandbox.SideBySide: the linux runtime)")

// sharedSandbox is the view of an E2B sandbox's coderun sandbox that its
// contexts' sessions, its commands and its envd helper each start their
// program through: every program starts beside the others (StartBeside),
// over the one workspace. Closing the view closes nothing: the box owns
// the sandbox.
type sharedSandbox struct {
	sandbox.Sandbox
}

func (s sharedSandbox) Start(ctx context.Context, prog sandbox.Program) (sandbox.Process, error) {
	side, ok := s.Sandbox.(sandbox.SideBySide)
	if !ok {
		p, err := s.Sandbox.Start(ctx, prog)
		if err != nil {
			return nil, fmt.Errorf("%w (%v)", errOneAtATime, err)
		}
		return p, nil
	}
	return side.StartBeside(ctx, prog)
}

// Close leaves the sandbox to its box.
func (s sharedSandbox) Close() error { return nil }

// PutArchive and GetArchive are the sandbox's own (sandbox.Archiver), so
// that the sessions over the view stream files in and out of the
// workspace rather than hold them whole.
func (s sharedSandbox) PutArchive(ctx context.Context, r io.Reader) error {
	ar, ok := s.Sandbox.(sandbox.Archiver)
	if !ok {
		return fmt.Errorf("%w: this runtime's sandboxes do not move tar streams", errors.ErrUnsupported)
	}
	return ar.PutArchive(ctx, r)
}

func (s sharedSandbox) GetArchive(ctx context.Context, paths []string) (io.ReadCloser, error) {
	ar, ok := s.Sandbox.(sandbox.Archiver)
	if !ok {
		return nil, fmt.Errorf("%w: this runtime's sandboxes do not move tar streams", errors.ErrUnsupported)
	}
	return ar.GetArchive(ctx, paths)
}
