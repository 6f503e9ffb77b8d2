package e2b

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/coderun/coderun/session"
)

// defaultCommandTimeout bounds a command whose call names no deadline
// (Connect-Timeout-Ms).
const defaultCommandTimeout = time.Hour

type processConfig struct {
	Cmd  string            `json:"cmd"`
	Args []string          `json:"args,omitempty"`
	Envs map[string]string `json:"envs,omitempty"`
	Cwd  *string           `json:"cwd,omitempty"`
}

type startRequest struct {
	Process *processConfig   `json:"process"`
	Pty     *json.RawMessage `json:"pty"`
	Tag     *string          `json:"tag"`
	Stdin   *bool            `json:"stdin"`
}

type processSelector struct {
	PID *uint32 `json:"pid,omitempty"`
	Tag *string `json:"tag,omitempty"`
}

type processInput struct {
	Stdin []byte `json:"stdin,omitempty"`
	Pty   []byte `json:"pty,omitempty"`
}

type processInfo struct {
	Config processConfig `json:"config"`
	PID    uint32        `json:"pid"`
	Tag    *string       `json:"tag,omitempty"`
}

// command is a command running in a sandbox, through the helper in its
// default context's interpreter.
type command struct {
	pid    uint32
	config processConfig
	tag    *string
	stdin  bool
	inbox  string // workspace-relative directory its input goes through

	mu   sync.Mutex
	seq  int
	done bool
}

// processRoutes serve envd's process.Process service.
func (s *Service) processRoutes(mux *http.ServeMux) {
	const svc = "POST /process.Process/"
	mux.HandleFunc(svc+"Start", s.startProcess)
	mux.HandleFunc(svc+"List", func(w http.ResponseWriter, r *http.Request) {
		unaryRPC(w, r, func(r *http.Request, _ *struct{}) (*struct {
			Processes []processInfo `json:"processes"`
		}, error) {
			b := boxFrom(r.Context())
			out := &struct {
				Processes []processInfo `json:"processes"`
			}{Processes: []processInfo{}}
			b.mu.Lock()
			for _, c := range b.cmds {
				out.Processes = append(out.Processes, processInfo{Config: c.config, PID: c.pid, Tag: c.tag})
			}
			b.mu.Unlock()
			return out, nil
		})
	})
	mux.HandleFunc(svc+"SendInput", func(w http.ResponseWriter, r *http.Request) {
		unaryRPC(w, r, func(r *http.Request, req *struct {
			Process processSelector `json:"process"`
			Input   processInput    `json:"input"`
		}) (*struct{}, error) {
			c, err := findCommand(r, req.Process)
			if err != nil {
				return nil, err
			}
			if req.Input.Pty != nil {
				return nil, rpcErrorf(codeUnimplemented, "PTY input: coderun runs commands without a terminal")
			}
			return &struct{}{}, c.input(boxFrom(r.Context()).primary.sess, req.Input.Stdin, false)
		})
	})
	mux.HandleFunc(svc+"CloseStdin", func(w http.ResponseWriter, r *http.Request) {
		unaryRPC(w, r, func(r *http.Request, req *struct {
			Process processSelector `json:"process"`
		}) (*struct{}, error) {
			c, err := findCommand(r, req.Process)
			if err != nil {
				return nil, err
			}
			return &struct{}{}, c.input(boxFrom(r.Context()).primary.sess, nil, true)
		})
	})
	mux.HandleFunc(svc+"SendSignal", func(w http.ResponseWriter, r *http.Request) {
		unaryRPC(w, r, func(r *http.Request, req *struct {
			Process processSelector `json:"process"`
			Signal  string          `json:"signal"`
		}) (*struct{}, error) {
			c, err := findCommand(r, req.Process)
			if err != nil {
				return nil, err
			}
			var sig int
			switch req.Signal {
			case "SIGNAL_SIGKILL", "":
				sig = 9
			case "SIGNAL_SIGTERM":
				sig = 15
			default:
				return nil, rpcErrorf(codeInvalidArgument, "signal %q: SIGNAL_SIGKILL or SIGNAL_SIGTERM", req.Signal)
			}
			sess := boxFrom(r.Context()).primary.sess
			if err := sess.Upload(c.inbox+"/signal", []byte(strconv.Itoa(sig)), 0o644); err != nil {
				return nil, rpcErrorf(codeInternal, "signal: %v", err)
			}
			c.mu.Lock()
			done := c.done
			c.mu.Unlock()
			if done {
				return nil, rpcErrorf(codeNotFound, "process %d has ended", c.pid)
			}
			sess.Interrupt() // the helper passes the signal on to the command
			return &struct{}{}, nil
		})
	})
	for _, m := range []string{"Connect", "StreamInput", "Update"} {
		mux.HandleFunc(svc+m, func(w http.ResponseWriter, r *http.Request) {
			writeRPCError(w, rpcErrorf(codeUnimplemented, "process.Process/%s is not supported by coderun (commands run without a terminal and are followed by the call that started them)", m))
		})
	}
}

func findCommand(r *http.Request, sel processSelector) (*command, error) {
	b := boxFrom(r.Context())
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.cmds {
		if (sel.PID != nil && c.pid == *sel.PID) || (sel.Tag != nil && c.tag != nil && *c.tag == *sel.Tag) {
			return c, nil
		}
	}
	switch {
	case sel.PID != nil:
		return nil, rpcErrorf(codeNotFound, "process with pid %d not found", *sel.PID)
	case sel.Tag != nil:
		return nil, rpcErrorf(codeNotFound, "process with tag %q not found", *sel.Tag)
	}
	return nil, rpcErrorf(codeInvalidArgument, "the process selector names no pid or tag")
}

// input passes data (or the end of input) to the command's standard input,
// as files the helper reads: N, then N.ready.
func (c *command) input(sess *session.Session, data []byte, eof bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return rpcErrorf(codeNotFound, "process %d has ended", c.pid)
	}
	if !c.stdin {
		return rpcErrorf(codeFailedPrecondition, "process %d was started without stdin", c.pid)
	}
	if eof {
		if err := sess.Upload(c.inbox+"/eof.ready", nil, 0o644); err != nil {
			return rpcErrorf(codeInternal, "close stdin: %v", err)
		}
		return nil
	}
	n := strconv.Itoa(c.seq)
	if err := sess.Upload(c.inbox+"/"+n, data, 0o644); err != nil {
		return rpcErrorf(codeInternal, "stdin: %v", err)
	}
	if err := sess.Upload(c.inbox+"/"+n+".ready", nil, 0o644); err != nil {
		return rpcErrorf(codeInternal, "stdin: %v", err)
	}
	c.seq++
	return nil
}

type processEvent struct {
	Event any `json:"event"`
}

func (s *Service) startProcess(w http.ResponseWriter, r *http.Request) {
	var req startRequest
	st := startStream(w, r, &req)
	if st == nil {
		return
	}
	b := boxFrom(r.Context())
	p := req.Process
	switch {
	case p == nil || p.Cmd == "":
		st.end(rpcErrorf(codeInvalidArgument, "process.cmd is required"))
		return
	case req.Pty != nil:
		st.end(rpcErrorf(codeUnimplemented, "PTY: coderun runs commands without a terminal"))
		return
	}
	if err := validEnvNames(p.Envs); err != nil {
		st.end(rpcErrorf(codeInvalidArgument, "%v", err))
		return
	}
	cwd := Workdir
	if p.Cwd != nil && *p.Cwd != "" {
		rel, err := workspacePath(*p.Cwd)
		if err != nil {
			st.end(rpcErrorf(codeInvalidArgument, "cwd: %v", err))
			return
		}
		cwd = sandboxPath(rel)
	}
	release, err := s.startExecution(b.tenant)
	if err != nil {
		st.end(&rpcError{Code: "resource_exhausted", Message: err.Error()})
		return
	}
	defer release()
	timeout := defaultCommandTimeout
	if ms, err := strconv.ParseInt(r.Header.Get("Connect-Timeout-Ms"), 10, 64); err == nil && ms > 0 {
		timeout = min(time.Duration(ms)*time.Millisecond, defaultCommandTimeout)
	}
	b.mu.Lock()
	b.nextCmd++
	c := &command{config: *p, tag: req.Tag, stdin: req.Stdin != nil && *req.Stdin,
		inbox: fmt.Sprintf("%s/in-%d", helperDir, b.nextCmd)}
	b.mu.Unlock()

	stop := make(chan struct{})
	defer close(stop)
	if secs, err := strconv.Atoi(r.Header.Get("Keepalive-Ping-Interval")); err == nil && secs > 0 {
		go func() {
			t := time.NewTicker(time.Duration(secs) * time.Second)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					_ = st.send(processEvent{map[string]any{"keepalive": struct{}{}}})
				}
			}
		}()
	}

	args := map[string]any{"cmd": p.Cmd, "args": p.Args, "envs": p.Envs, "cwd": cwd, "stdin": c.stdin, "inbox": sandboxPath(c.inbox)}
	var res struct {
		Exit *int `json:"exit"`
	}
	started := false
	// Output can come before the helper's answer with the pid (the command
	// writes as soon as it runs): it is held until the start event is out.
	var early []session.Output
	sendData := func(o session.Output) {
		key := "stdout"
		if o.Name == "stderr" {
			key = "stderr"
		}
		_ = st.send(processEvent{map[string]any{"data": map[string]any{key: []byte(o.Text)}}})
	}
	err = runHelper(r.Context(), b.primary.sess, helperCall{op: "run", args: args, timeout: timeout,
		onAnswer: func(raw json.RawMessage) {
			var a struct {
				PID *uint32 `json:"pid"`
			}
			if json.Unmarshal(raw, &a) != nil || a.PID == nil || started {
				return
			}
			started = true
			c.pid = *a.PID
			b.mu.Lock()
			b.cmds[c.pid] = c
			b.mu.Unlock()
			_ = st.send(processEvent{map[string]any{"start": map[string]any{"pid": c.pid}}})
			for _, o := range early {
				sendData(o)
			}
			early = nil
		},
		onStream: func(o session.Output) {
			switch {
			case o.Text == "":
			case !started:
				early = append(early, o)
			default:
				sendData(o)
			}
		},
	}, &res)
	if started {
		c.mu.Lock()
		c.done = true
		c.mu.Unlock()
		b.mu.Lock()
		if b.cmds[c.pid] == c {
			delete(b.cmds, c.pid)
		}
		b.mu.Unlock()
	}
	if err != nil {
		st.end(err)
		return
	}
	if res.Exit == nil {
		st.end(rpcErrorf(codeInternal, "the sandbox's helper did not say how the command ended"))
		return
	}
	end := map[string]any{"exitCode": *res.Exit, "exited": true, "status": fmt.Sprintf("exit status %d", *res.Exit)}
	if *res.Exit < 0 {
		end = map[string]any{"exitCode": -1, "exited": false, "status": "signal: " + signalName(-*res.Exit)}
	}
	_ = st.send(processEvent{map[string]any{"end": end}})
	st.end(nil)
}

func signalName(sig int) string {
	switch sig {
	case 9:
		return "killed"
	case 15:
		return "terminated"
	case 2:
		return "interrupt"
	}
	return "signal " + strconv.Itoa(sig)
}
