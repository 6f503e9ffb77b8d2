// Package hostdir moves files between the trusted side and a sandbox's
// workspace for runtimes whose workspace is a directory the host can open
// (sandbox/linux mounts it from a tmpfs it holds): writing a request's input
// files, listing and reading what a run created or changed, reading one
// file, and packing or unpacking the workspace as a tar stream.
//
// Everything here treats the workspace as hostile: it was written by
// sandboxed code. Paths go through an os.Root, so nothing leads out of the
// directory; links are reported, never followed; only regular files and
// directories are read or made; and what comes out is bounded by the size
// of the file system that holds the workspace, whatever sparse files or
// hard links are in it.
//
// A runtime without such a directory (a container engine, a remote
// sandbox) does not use this package; it moves files its own way behind
// sandbox.Sandbox and sandbox.Archiver.
package hostdir
