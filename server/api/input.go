package api

import (
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/server/input"
)

// The request bodies' shared parts — durations, sizes, limits and files —
// are read as every surface reads them (package server/input): limits with
// every field of an execution, files with their permission bits.
type (
	duration = input.Duration
	size     = input.Size
	limitsIn = input.ExecLimits
	fileIn   = input.FileWithMode
)

// files checks and decodes a request's files (see input.FilesWithMode);
// the body's cap and the workspace's size bound them together.
func files(in []fileIn) ([]sandbox.File, error) { return input.FilesWithMode(in, 0) }
