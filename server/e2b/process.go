package e2b

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/server"
)

// defaultCommandTimeout bounds a command whose call names no deadline
// (Connect-Timeout-Ms).
const defaultCommandTimeout = time.Hour

// firstPID is the pid of a sandbox's first command (E2B's are the
// sandbox's process ids; coderun numbers its commands from here).
const firstPID = 1000

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

type processEvent struct {
	Event any `json:"event"`
}

// command is a command running in an E2B sandbox: a program of its own,
// started beside the sandbox's contexts and other commands, over its
// workspace. It runs until it ends, is killed (SendSignal, its timeout,
// the sandbox's end), whoever follows it: the call that started it and
// those that connect to it (Connect) see its events from when they came;
// one going away leaves it running.
type command struct {
	pid    uint32
	config processConfig
	tag    *string
	stdin  bool
	proc   sandbox.Process

	stdinMu sync.Mutex // one write to its standard input at a time

	mu       sync.Mutex
	subs     map[int]func(processEvent)
	nextSub  int
	ended    bool
	timedOut bool
	done     chan struct{} // closed once the end event is out
}

// subscribe adds fn to the command's listeners, first giving it the start
// event, and returns what removes it; ok is false once it has ended.
func (c *command) subscribe(fn func(processEvent)) (unsubscribe func(), ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return nil, false
	}
	// Sent under the lock: no output can come before the start event.
	fn(processEvent{map[string]any{"start": map[string]any{"pid": c.pid}}})
	id := c.nextSub
	c.nextSub++
	c.subs[id] = fn
	return func() {
		c.mu.Lock()
		delete(c.subs, id)
		c.mu.Unlock()
	}, true
}

// broadcast gives ev to every listener, in order with the others.
func (c *command) broadcast(ev processEvent, last bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, fn := range c.subs {
		fn(ev)
	}
	if last {
		c.ended = true
		c.subs = nil
	}
}

// pump passes what the command writes on one stream to its listeners.
func (c *command) pump(r io.Reader, key string, done *sync.WaitGroup) {
	defer done.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			data := append([]byte(nil), buf[:n]...)
			c.broadcast(processEvent{map[string]any{"data": map[string]any{key: data}}}, false)
		}
		if err != nil {
			return
		}
	}
}

// endEvent is E2B's end event for how the command ended.
func endEvent(res *sandbox.Result) map[string]any {
	switch {
	case res.Reason == sandbox.ReasonExited && res.Signal == "":
		return map[string]any{"exitCode": res.ExitCode, "exited": true, "status": fmt.Sprintf("exit status %d", res.ExitCode)}
	case res.Reason == sandbox.ReasonExited:
		return map[string]any{"exitCode": -1, "exited": false, "status": "signal: " + signalName(res.Signal)}
	case res.Reason == sandbox.ReasonKilled:
		return map[string]any{"exitCode": -1, "exited": false, "status": "signal: killed"}
	}
	msg := string(res.Reason)
	if res.Error != "" {
		msg += ": " + res.Error
	}
	return map[string]any{"exitCode": -1, "exited": false, "status": "signal: killed", "error": msg}
}

// commandProgram is the bash program that runs cfg in cwd: exec'd, so the
// command is the program.
func commandProgram(cfg *processConfig, cwd string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "cd -- %s || exit 1\nexec --", shellQuote(cwd))
	for _, a := range append([]string{cfg.Cmd}, cfg.Args...) {
		b.WriteString(" " + shellQuote(a))
	}
	b.WriteString("\n")
	return b.String()
}

// defaultUser is E2B's user, the one every command of a sandbox runs as
// (in coderun, the sandbox's unprivileged user).
const defaultUser = "user"

// requestUser is the user a call asks to act as: the SDK's `user` option,
// sent as HTTP Basic authentication with an empty password; "" for none.
func requestUser(r *http.Request) string {
	u, _, ok := r.BasicAuth()
	if !ok {
		return ""
	}
	return u
}

// processRoutes serve envd's process.Process service.
func (s *Service) processRoutes(mux *http.ServeMux) {
	const svc = "POST /process.Process/"
	mux.HandleFunc(svc+"Start", s.startProcess)
	mux.HandleFunc(svc+"Connect", s.connectProcess)
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
			sort.Slice(out.Processes, func(i, j int) bool { return out.Processes[i].PID < out.Processes[j].PID })
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
			return &struct{}{}, c.input(r.Context(), req.Input.Stdin, false)
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
			return &struct{}{}, c.input(r.Context(), nil, true)
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
			switch req.Signal {
			case "SIGNAL_SIGKILL", "":
				c.proc.Kill()
			case "SIGNAL_SIGTERM":
				if err := c.proc.Signal(syscall.SIGTERM); err != nil {
					return nil, rpcErrorf(codeNotFound, "process %d: %v", c.pid, err)
				}
			default:
				return nil, rpcErrorf(codeInvalidArgument, "signal %q: SIGNAL_SIGKILL or SIGNAL_SIGTERM", req.Signal)
			}
			return &struct{}{}, nil
		})
	})
	for _, m := range []string{"StreamInput", "Update"} {
		mux.HandleFunc(svc+m, func(w http.ResponseWriter, r *http.Request) {
			writeRPCError(w, rpcErrorf(codeUnimplemented, "process.Process/%s is not supported by coderun (commands run without a terminal; their input goes through SendInput)", m))
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

// input writes data to the command's standard input, or closes it.
func (c *command) input(ctx context.Context, data []byte, eof bool) error {
	c.mu.Lock()
	ended := c.ended
	c.mu.Unlock()
	if ended {
		return rpcErrorf(codeNotFound, "process %d has ended", c.pid)
	}
	if !c.stdin {
		return rpcErrorf(codeFailedPrecondition, "process %d was started without stdin", c.pid)
	}
	c.stdinMu.Lock()
	defer c.stdinMu.Unlock()
	if eof {
		if err := c.proc.Stdin().Close(); err != nil && !errors.Is(err, io.ErrClosedPipe) {
			return rpcErrorf(codeInternal, "close stdin: %v", err)
		}
		return nil
	}
	written := make(chan error, 1)
	go func() {
		_, err := c.proc.Stdin().Write(data)
		written <- err
	}()
	select {
	case err := <-written:
		if err != nil {
			return rpcErrorf(codeFailedPrecondition, "process %d does not take input: %v", c.pid, err)
		}
		return nil
	case <-ctx.Done():
		// The write goes on; the next waits for it.
		return rpcErrorf(codeCanceled, "stdin: %v", context.Cause(ctx))
	}
}

// follow streams the command's events on st until it ends (then the end
// of the stream) or the client goes away (the command runs on).
func (c *command) follow(r *http.Request, st *stream, unsubscribe func()) {
	defer unsubscribe()
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
	select {
	case <-c.done:
		c.mu.Lock()
		timedOut := c.timedOut
		c.mu.Unlock()
		if timedOut {
			st.end(&rpcError{Code: "deadline_exceeded", Message: fmt.Sprintf("process %d ran past its timeout and was killed", c.pid)})
			return
		}
		st.end(nil)
	case <-r.Context().Done():
		if server.ShuttingDown(r.Context()) {
			st.end(rpcErrorf(codeUnavailable, "%v: process %d runs on, but this call ends", server.ErrShutdown, c.pid))
		}
	}
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
		st.end(rpcErrorf(codeUnimplemented, "PTY: coderun runs commands without a terminal (commands.run works; pty.create does not)"))
		return
	}
	if err := validEnvNames(p.Envs); err != nil {
		st.end(rpcErrorf(codeInvalidArgument, "%v", err))
		return
	}
	if u := requestUser(r); u != "" && u != defaultUser {
		st.end(rpcErrorf(codeUnimplemented, "commands run as the sandbox's one unprivileged user (E2B's %q); user %q is not served by coderun", defaultUser, u))
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
	// The sandbox is in use from here on (see keepAlive), while the
	// program starts too.
	unhold := b.primary.sess.Hold()
	defer unhold()
	release, err := s.startExecution(b.tenant)
	if err != nil {
		st.end(&rpcError{Code: "resource_exhausted", Message: err.Error()})
		return
	}
	timeout := defaultCommandTimeout
	if ms, err := strconv.ParseInt(r.Header.Get("Connect-Timeout-Ms"), 10, 64); err == nil && ms > 0 {
		timeout = min(time.Duration(ms)*time.Millisecond, defaultCommandTimeout)
	}
	if !b.reserveCommand(s.opts.MaxCommands) {
		release()
		st.end(&rpcError{Code: "resource_exhausted", Message: fmt.Sprintf("%d commands already run in this sandbox, as many as coderun runs at once in one", s.opts.MaxCommands)})
		return
	}
	env := mergeEnv(mergeEnv(s.opts.Session.Env, b.env), p.Envs)
	proc, err := b.view.Start(r.Context(), sandbox.Program{Language: sandbox.Bash, Code: commandProgram(p, cwd), Env: env})
	if err != nil {
		release()
		b.unreserveCommand()
		code := codeInternal
		switch {
		case errors.Is(err, errOneAtATime):
			code = codeFailedPrecondition
		case errors.Is(err, sandbox.ErrInvalid):
			code = codeInvalidArgument
		}
		st.end(rpcErrorf(code, "start the command: %v", err))
		return
	}
	c := &command{config: *p, tag: req.Tag, stdin: req.Stdin != nil && *req.Stdin, proc: proc,
		subs: map[int]func(processEvent){}, done: make(chan struct{})}
	if !c.stdin {
		_ = proc.Stdin().Close()
	}
	b.mu.Lock()
	c.pid = uint32(firstPID + b.nextCmd)
	b.nextCmd++
	closed := b.closed
	if !closed {
		b.cmds[c.pid] = c
	}
	b.mu.Unlock()
	if closed {
		proc.Kill()
		proc.Wait(context.Background())
		release()
		b.unreserveCommand()
		st.end(rpcErrorf(codeUnavailable, "the sandbox has ended"))
		return
	}
	unsubscribe, _ := c.subscribe(func(ev processEvent) { _ = st.send(ev) })

	var pumps sync.WaitGroup
	pumps.Add(2)
	go c.pump(proc.Stdout(), "stdout", &pumps)
	go c.pump(proc.Stderr(), "stderr", &pumps)
	go b.keepAlive(c.done)
	go func() {
		defer release()
		defer b.unreserveCommand()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		res := proc.Wait(ctx)
		pumps.Wait()
		c.mu.Lock()
		c.timedOut = res.Reason == sandbox.ReasonKilled && ctx.Err() != nil
		c.mu.Unlock()
		c.broadcast(processEvent{map[string]any{"end": endEvent(res)}}, true)
		b.mu.Lock()
		if b.cmds[c.pid] == c {
			delete(b.cmds, c.pid)
		}
		b.mu.Unlock()
		close(c.done)
	}()
	c.follow(r, st, unsubscribe)
}

// connectProcess follows a running command (commands.connect).
func (s *Service) connectProcess(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Process processSelector `json:"process"`
	}
	st := startStream(w, r, &req)
	if st == nil {
		return
	}
	c, err := findCommand(r, req.Process)
	if err != nil {
		st.end(err)
		return
	}
	unsubscribe, ok := c.subscribe(func(ev processEvent) { _ = st.send(ev) })
	if !ok {
		st.end(rpcErrorf(codeNotFound, "process %d has ended", c.pid))
		return
	}
	c.follow(r, st, unsubscribe)
}

// signalName is Go's name of a signal (os/exec's "signal: killed").
func signalName(sig string) string {
	switch sig {
	case "SIGKILL":
		return "killed"
	case "SIGTERM":
		return "terminated"
	case "SIGINT":
		return "interrupt"
	}
	return sig
}
