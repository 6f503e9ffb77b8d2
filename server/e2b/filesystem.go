package e2b

import (
	"net/http"
	"time"
)

// entryInfo is envd's EntryInfo as the helper reports it: mtime_ns is
// turned into modifiedTime here.
type entryInfo struct {
	Name          string  `json:"name"`
	Type          string  `json:"type"`
	Path          string  `json:"path"`
	Size          int64   `json:"size"`
	Mode          uint32  `json:"mode"`
	Permissions   string  `json:"permissions"`
	Owner         string  `json:"owner"`
	Group         string  `json:"group"`
	MtimeNS       int64   `json:"mtime_ns,omitempty"`
	ModifiedTime  string  `json:"modifiedTime,omitempty"`
	SymlinkTarget *string `json:"symlinkTarget,omitempty"`
}

// finish sets modifiedTime in the form protobuf's JSON mapping reads (UTC,
// nine fractional digits, Z).
func (e *entryInfo) finish() {
	if e.MtimeNS != 0 {
		e.ModifiedTime = time.Unix(0, e.MtimeNS).UTC().Format("2006-01-02T15:04:05.000000000Z")
		e.MtimeNS = 0
	}
}

type pathRequest struct {
	Path string `json:"path"`
}

type entryResponse struct {
	Entry *entryInfo `json:"entry"`
}

type listDirRequest struct {
	Path  string `json:"path"`
	Depth uint32 `json:"depth"`
}

type listDirResponse struct {
	Entries []*entryInfo `json:"entries"`
}

type moveRequest struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
}

// maxListDepth bounds ListDir's depth.
const maxListDepth = 64

// filesystemRoutes serve envd's filesystem.Filesystem service.
func (s *Service) filesystemRoutes(mux *http.ServeMux) {
	const svc = "POST /filesystem.Filesystem/"
	mux.HandleFunc(svc+"Stat", func(w http.ResponseWriter, r *http.Request) {
		unaryRPC(w, r, func(r *http.Request, req *pathRequest) (*entryResponse, error) {
			return s.entryOp(r, "stat", req.Path)
		})
	})
	mux.HandleFunc(svc+"MakeDir", func(w http.ResponseWriter, r *http.Request) {
		unaryRPC(w, r, func(r *http.Request, req *pathRequest) (*entryResponse, error) {
			return s.entryOp(r, "mkdir", req.Path)
		})
	})
	mux.HandleFunc(svc+"Remove", func(w http.ResponseWriter, r *http.Request) {
		unaryRPC(w, r, func(r *http.Request, req *pathRequest) (*struct{}, error) {
			rel, err := workspacePath(req.Path)
			if err != nil {
				return nil, rpcErrorf(codeInvalidArgument, "%v", err)
			}
			if rel == "" {
				return nil, rpcErrorf(codeInvalidArgument, "the workspace itself cannot be removed")
			}
			b := boxFrom(r.Context())
			return &struct{}{}, b.fs.call(r.Context(), "remove", pathRequest{sandboxPath(rel)}, nil)
		})
	})
	mux.HandleFunc(svc+"Move", func(w http.ResponseWriter, r *http.Request) {
		unaryRPC(w, r, func(r *http.Request, req *moveRequest) (*entryResponse, error) {
			src, err := workspacePath(req.Source)
			if err != nil {
				return nil, rpcErrorf(codeInvalidArgument, "source: %v", err)
			}
			dst, err := workspacePath(req.Destination)
			if err != nil {
				return nil, rpcErrorf(codeInvalidArgument, "destination: %v", err)
			}
			if src == "" || dst == "" {
				return nil, rpcErrorf(codeInvalidArgument, "the workspace itself cannot be moved or replaced")
			}
			b := boxFrom(r.Context())
			var resp entryResponse
			err = b.fs.call(r.Context(), "move", moveRequest{sandboxPath(src), sandboxPath(dst)}, &resp)
			if err != nil {
				return nil, err
			}
			if resp.Entry == nil {
				return nil, rpcErrorf(codeInternal, "the sandbox's helper answered without an entry")
			}
			resp.Entry.finish()
			return &resp, nil
		})
	})
	mux.HandleFunc(svc+"ListDir", func(w http.ResponseWriter, r *http.Request) {
		unaryRPC(w, r, func(r *http.Request, req *listDirRequest) (*listDirResponse, error) {
			rel, err := workspacePath(req.Path)
			if err != nil {
				return nil, rpcErrorf(codeInvalidArgument, "%v", err)
			}
			if req.Depth > maxListDepth {
				return nil, rpcErrorf(codeInvalidArgument, "depth %d is more than %d", req.Depth, maxListDepth)
			}
			b := boxFrom(r.Context())
			resp := listDirResponse{Entries: []*entryInfo{}}
			args := map[string]any{"path": sandboxPath(rel), "depth": req.Depth}
			if err := b.fs.call(r.Context(), "list", args, &resp); err != nil {
				return nil, err
			}
			for _, e := range resp.Entries {
				e.finish()
			}
			return &resp, nil
		})
	})
	mux.HandleFunc(svc+"WatchDir", s.watchDir)
	for _, m := range []string{"CreateWatcher", "GetWatcherEvents", "RemoveWatcher"} {
		mux.HandleFunc(svc+m, func(w http.ResponseWriter, r *http.Request) {
			writeRPCError(w, rpcErrorf(codeUnimplemented, "filesystem.Filesystem/%s: coderun serves directory watches as a stream (WatchDir), not as polled watchers", m))
		})
	}
}

// entryOp runs a helper op on one path and answers with its entry.
func (s *Service) entryOp(r *http.Request, op, p string) (*entryResponse, error) {
	rel, err := workspacePath(p)
	if err != nil {
		return nil, rpcErrorf(codeInvalidArgument, "%v", err)
	}
	if op == "mkdir" && rel == "" {
		return nil, rpcErrorf(codeAlreadyExists, "%s already exists", Workdir)
	}
	b := boxFrom(r.Context())
	var resp entryResponse
	if err := b.fs.call(r.Context(), op, pathRequest{sandboxPath(rel)}, &resp); err != nil {
		return nil, err
	}
	if resp.Entry == nil {
		return nil, rpcErrorf(codeInternal, "the sandbox's helper answered without an entry")
	}
	resp.Entry.finish()
	return &resp, nil
}
