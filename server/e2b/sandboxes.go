package e2b

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/session"
)

// DebugSandboxID is the sandbox id the SDK's debug mode sends: requests
// for it are served by a sandbox made on first use.
const DebugSandboxID = "debug_sandbox_id"

// Sandbox timeouts (E2B's: five minutes unless asked, at most a day).
const (
	DefaultTimeout = 5 * time.Minute
	MaxTimeout     = 24 * time.Hour
)

// errSandboxNotFound: no such sandbox in the tenant.
var errSandboxNotFound = errors.New("sandbox not found")

// box is one E2B sandbox: a coderun sandbox (sb) whose workspace is its
// file system, in which its contexts' interpreters, its commands and its
// envd helper run side by side; its default Python context; and its
// lifetime.
type box struct {
	id       string
	tenant   string
	template string
	token    string // envd access token; "" for a sandbox made on first use
	traffic  string // the interpreter's access token, as token
	created  time.Time
	metadata map[string]string
	env      map[string]string
	sb       sandbox.Sandbox // owned: closed when the box is killed
	view     sharedSandbox   // what its programs start through
	fs       *envd
	primary  *codeContext

	mu       sync.Mutex
	endAt    time.Time // zero: no timeout (debug sandboxes; idle eviction applies)
	timer    *time.Timer
	contexts map[string]*codeContext
	defaults map[string]string   // language → its default context's id
	cmds     map[uint32]*command // the commands running, by pid
	nextCmd  int
	running  int // commands started or starting, not yet ended
	closed   bool
	ended    chan struct{} // closed once the box is killed
}

// codeContext is one code-interpreter context: a session.
type codeContext struct {
	id   string
	lang string // E2B's name: python, bash
	cwd  string // as reported, absolute in the sandbox
	sess *session.Session
	// release gives the session's place among the tenant's back.
	release func()

	mu    sync.Mutex
	count int // executions E2B ran in it since its last restart
}

// registry keeps the E2B sandboxes of all tenants.
type registry struct {
	mu    sync.Mutex
	boxes map[boxKey]*box
	// making holds the sandboxes being made on first use, so that two
	// first requests make one.
	making map[boxKey]chan struct{}
}

type boxKey struct{ tenant, id string }

func newRegistry() *registry {
	return &registry{boxes: map[boxKey]*box{}, making: map[boxKey]chan struct{}{}}
}

// sandboxOptions describe a sandbox to create.
type sandboxOptions struct {
	template string
	timeout  time.Duration // 0: none
	metadata map[string]string
	env      map[string]string
	id       string // "" for a new one
	token    bool   // issue an envd access token
}

// create makes a sandbox in tenant's sessions.
func (s *Service) create(ctx context.Context, tenant string, o sandboxOptions) (*box, error) {
	sessions, err := s.opts.Manager.Tenant(tenant)
	if err != nil {
		return nil, err
	}
	release, err := s.reserveSession(tenant)
	if err != nil {
		return nil, err
	}
	cfg := s.opts.Session
	cfg.Language = sandbox.Python
	cfg.Env = mergeEnv(cfg.Env, o.env)
	lim := cfg.Limits.WithDefaults(session.DefaultLimits)
	sb, err := s.opts.Manager.Runtime().NewSandbox(ctx, sandbox.Spec{Limits: sandbox.Limits{
		Memory: lim.Memory, Processes: lim.Processes, OpenFiles: lim.OpenFiles, WorkspaceBytes: lim.WorkspaceBytes}})
	if err != nil {
		release()
		return nil, fmt.Errorf("create the sandbox: %w", err)
	}
	view := sharedSandbox{sb}
	cfg.Sandbox = view
	sess, err := sessions.Create(ctx, cfg)
	if err != nil {
		release()
		sb.Close()
		return nil, fmt.Errorf("create the sandbox's session: %w", err)
	}
	id := o.id
	if id == "" {
		id = "i" + randomHex(10)
	}
	b := &box{id: id, tenant: tenant, template: o.template, created: time.Now(), metadata: o.metadata, env: o.env,
		sb: sb, view: view, fs: &envd{sb: view}, ended: make(chan struct{}),
		contexts: map[string]*codeContext{}, defaults: map[string]string{}, cmds: map[uint32]*command{}}
	if o.token {
		b.token, b.traffic = randomHex(24), randomHex(24)
	}
	b.primary = &codeContext{id: sess.ID(), lang: "python", cwd: Workdir, sess: sess, release: release}
	b.contexts[b.primary.id] = b.primary
	b.defaults["python"] = b.primary.id
	if o.timeout > 0 {
		b.setTimeout(o.timeout, func() { s.kill(b) })
	}
	s.reg.mu.Lock()
	s.reg.boxes[boxKey{tenant, id}] = b
	s.reg.mu.Unlock()
	go s.endWithPrimary(b)
	return b, nil
}

// primaryCheckEvery is how often a sandbox looks whether its default
// context is still open.
const primaryCheckEvery = time.Second

// endWithPrimary kills the sandbox once its default context has been
// closed under it (the session manager evicted it as idle or to make
// room): its other contexts, commands, file helper and workspace go with
// it, whether or not a request comes for it again.
func (s *Service) endWithPrimary(b *box) {
	t := time.NewTicker(primaryCheckEvery)
	defer t.Stop()
	for {
		select {
		case <-b.ended:
			return
		case <-t.C:
			if b.primary.sess.Closed() != nil {
				s.kill(b)
				return
			}
		}
	}
}

// lookup finds tenant's sandbox id. A sandbox whose session was evicted or
// closed is forgotten and not found.
func (s *Service) lookup(tenant, id string) (*box, error) {
	s.reg.mu.Lock()
	b := s.reg.boxes[boxKey{tenant, id}]
	s.reg.mu.Unlock()
	if b == nil {
		return nil, fmt.Errorf("%w: %s", errSandboxNotFound, id)
	}
	if err := b.primary.sess.Closed(); err != nil {
		s.kill(b)
		return nil, fmt.Errorf("%w: %s (%v)", errSandboxNotFound, id, err)
	}
	return b, nil
}

// lookupOrMake finds tenant's sandbox id, and makes the debug sandbox on
// first use.
func (s *Service) lookupOrMake(ctx context.Context, tenant, id string) (*box, error) {
	for {
		b, err := s.lookup(tenant, id)
		if err == nil || id != DebugSandboxID {
			return b, err
		}
		key := boxKey{tenant, id}
		s.reg.mu.Lock()
		wait, busy := s.reg.making[key]
		if !busy {
			done := make(chan struct{})
			s.reg.making[key] = done
			s.reg.mu.Unlock()
			b, err := s.create(ctx, tenant, sandboxOptions{template: "code-interpreter-v1", id: id})
			s.reg.mu.Lock()
			delete(s.reg.making, key)
			s.reg.mu.Unlock()
			close(done)
			return b, err
		}
		s.reg.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// list returns tenant's live sandboxes, oldest first.
func (s *Service) list(tenant string) []*box {
	s.reg.mu.Lock()
	var out []*box
	for k, b := range s.reg.boxes {
		if k.tenant == tenant {
			out = append(out, b)
		}
	}
	s.reg.mu.Unlock()
	live := out[:0]
	for _, b := range out {
		if b.primary.sess.Closed() != nil {
			s.kill(b)
			continue
		}
		live = append(live, b)
	}
	sort.Slice(live, func(i, j int) bool { return live[i].created.Before(live[j].created) })
	return live
}

// kill removes a sandbox and closes its sessions.
func (s *Service) kill(b *box) {
	s.reg.mu.Lock()
	if s.reg.boxes[boxKey{b.tenant, b.id}] == b {
		delete(s.reg.boxes, boxKey{b.tenant, b.id})
	}
	s.reg.mu.Unlock()
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.closed = true
	close(b.ended)
	if b.timer != nil {
		b.timer.Stop()
	}
	ctxs := make([]*codeContext, 0, len(b.contexts))
	for _, c := range b.contexts {
		ctxs = append(ctxs, c)
	}
	b.mu.Unlock()
	for _, c := range ctxs {
		c.close()
	}
	b.fs.stop()
	_ = b.sb.Close() // ends the commands still running
}

// closeAll kills every sandbox (the server is shutting down).
func (s *Service) closeAll() {
	s.reg.mu.Lock()
	all := make([]*box, 0, len(s.reg.boxes))
	for _, b := range s.reg.boxes {
		all = append(all, b)
	}
	s.reg.mu.Unlock()
	for _, b := range all {
		s.kill(b)
	}
}

// setTimeout makes the sandbox end d from now.
func (b *box) setTimeout(d time.Duration, kill func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.endAt = time.Now().Add(d)
	if b.timer != nil {
		b.timer.Stop()
	}
	b.timer = time.AfterFunc(d, kill)
}

// end returns when the sandbox will be stopped (zero: only when idle).
func (b *box) end() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.endAt
}

// tokenMatches reports whether tok is the sandbox's envd access token
// (traffic false) or its interpreter's (traffic true).
func (b *box) tokenMatches(tok string, traffic bool) bool {
	want := b.token
	if traffic {
		want = b.traffic
	}
	return want != "" && subtle.ConstantTimeCompare([]byte(want), []byte(tok)) == 1
}

// context returns the sandbox's context id.
func (b *box) context(id string) (*codeContext, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c, ok := b.contexts[id]
	return c, ok
}

// contextList returns the sandbox's contexts, the default one first.
func (b *box) contextList() []*codeContext {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]*codeContext, 0, len(b.contexts))
	for _, c := range b.contexts {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if (out[i] == b.primary) != (out[j] == b.primary) {
			return out[i] == b.primary
		}
		return out[i].sess.Info().Created.Before(out[j].sess.Info().Created)
	})
	return out
}

func mergeEnv(a, b map[string]string) map[string]string {
	if len(a) == 0 && len(b) == 0 {
		return nil
	}
	out := make(map[string]string, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// close ends the context's session and gives its place back.
func (c *codeContext) close() {
	_ = c.sess.Close()
	c.release()
}

// keepAlive holds the sandbox's default context in use until done is
// closed: a sandbox whose commands run or whose directory is watched is
// not idle, and the session manager must not evict it as such.
func (b *box) keepAlive(done <-chan struct{}) {
	release := b.primary.sess.Hold()
	<-done
	release()
}

// reserveCommand counts one more command running in the sandbox, unless
// max already do.
func (b *box) reserveCommand(max int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.running >= max {
		return false
	}
	b.running++
	return true
}

func (b *box) unreserveCommand() {
	b.mu.Lock()
	b.running--
	b.mu.Unlock()
}
