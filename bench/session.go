package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/coderun/coderun/bench/measure"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/linux"
	"github.com/coderun/coderun/session"
)

// SessionConfig sets the size of the session benchmark.
type SessionConfig struct {
	Cells    int      // round trips per cell-latency row
	Cold     int      // cold session starts per row
	Pooled   int      // sessions taken from the pool per row
	Idle     int      // idle sessions held at once for the memory figures
	Preload  []string // modules of the "preload" rows (none: rows skipped)
	PoolSize int
}

// DefaultSessionConfig is what `coderun bench session` uses.
var DefaultSessionConfig = SessionConfig{
	Cells:    1000,
	Cold:     5,
	Pooled:   20,
	Idle:     20,
	Preload:  []string{"numpy", "pandas", "matplotlib.pyplot"},
	PoolSize: 2,
}

// SessionReport is the outcome of Session.
type SessionReport struct {
	Host   measure.Host
	Config SessionConfig
	Cells  []Latency // direct baselines and session round trips
	Starts []Latency // time to a ready session
	Memory *IdleMemory
}

// IdleMemory is what idle sessions hold.
type IdleMemory struct {
	Sessions   int
	Responsive int   // sessions that answered a cell after all were started
	PSS, RSS   int64 // per session: sandbox init + interpreter, from /proc
	Available  int64 // per session: drop of MemAvailable while they were held
	Processes  int   // per session
	MemTotal   int64
	CreateTime time.Duration
}

// Session measures sessions against baselines taken in the same run: the
// round trip of a trivial cell through a session against the same
// statement sent to a plain interpreter process over a pipe, the time to a
// ready session from cold and from a warm pool, and the memory held by
// idle sessions.
func Session(ctx context.Context, cfg SessionConfig, progress io.Writer) (*SessionReport, error) {
	rep := &SessionReport{Host: measure.DetectHost(), Config: cfg}
	rt, err := linux.New(linux.Options{})
	if err != nil {
		return nil, err
	}
	defer rt.Close()

	fmt.Fprintln(progress, "cell round trips…")
	if rep.Cells, err = cellLatencies(ctx, rt, cfg.Cells); err != nil {
		return nil, err
	}
	fmt.Fprintln(progress, "session starts…")
	if rep.Starts, err = startLatencies(ctx, rt, cfg, progress); err != nil {
		return nil, err
	}
	if cfg.Idle > 0 {
		fmt.Fprintf(progress, "holding %d idle sessions…\n", cfg.Idle)
		if rep.Memory, err = idleMemory(ctx, rt, cfg.Idle, progress); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// pipeREPL is a plain interpreter answering one line per request.
type pipeREPL struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func startPipeREPL(argv ...string) (*pipeREPL, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &pipeREPL{cmd: cmd, in: in, out: bufio.NewReader(out)}, nil
}

func (p *pipeREPL) roundTrip(line string) error {
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		return err
	}
	_, err := p.out.ReadString('\n')
	return err
}

func (p *pipeREPL) close() {
	p.in.Close()
	_ = p.cmd.Wait()
}

// cellLatencies interleaves the rows, one round trip each in turn, so
// that the machine's noise falls on all of them alike.
func cellLatencies(ctx context.Context, rt *linux.Runtime, n int) ([]Latency, error) {
	py, err := startPipeREPL("/usr/bin/python3", "-u", "-c",
		"import sys\nfor line in sys.stdin:\n    sys.stdout.write(repr(eval(compile(line, '<cell>', 'eval'))) + '\\n')")
	if err != nil {
		return nil, err
	}
	defer py.close()
	sh, err := startPipeREPL("/usr/bin/bash", "-c", "while IFS= read -r line; do eval \"$line\"; echo; done")
	if err != nil {
		return nil, err
	}
	defer sh.close()
	ps, err := session.New(ctx, rt, session.Config{})
	if err != nil {
		return nil, err
	}
	defer ps.Close()
	bs, err := session.New(ctx, rt, session.Config{Language: sandbox.Bash})
	if err != nil {
		return nil, err
	}
	defer bs.Close()
	cell := func(s *session.Session, code string) func() error {
		return func() error {
			c, err := s.Execute(ctx, session.Exec{Code: code})
			if err == nil && c.Status != session.StatusOK {
				err = fmt.Errorf("%q: %s", code, c.Status)
			}
			return err
		}
	}
	rows := []struct {
		name string
		run  func() error
	}{
		{"python3 over a pipe: 1+1 (baseline)", func() error { return py.roundTrip("1+1") }},
		{"python session: 1+1", cell(ps, "1+1")},
		{"python session: pass (no result)", cell(ps, "pass")},
		{"bash over a pipe: : (baseline)", func() error { return sh.roundTrip(":") }},
		{"bash session: :", cell(bs, ":")},
	}
	times := make([][]time.Duration, len(rows))
	for i := 0; i < n+n/10; i++ {
		for j, r := range rows {
			start := time.Now()
			if err := r.run(); err != nil {
				return nil, fmt.Errorf("%s: %w", r.name, err)
			}
			if i >= n/10 { // the first tenth warms up
				times[j] = append(times[j], time.Since(start))
			}
		}
	}
	out := make([]Latency, len(rows))
	for j, r := range rows {
		out[j] = summarize(r.name, times[j], 0)
	}
	return out, nil
}

func summarize(name string, times []time.Duration, pooled int) Latency {
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	var sum time.Duration
	for _, t := range times {
		sum += t
	}
	return Latency{Name: name, P50: Percentile(times, 50), P95: Percentile(times, 95),
		Mean: sum / time.Duration(max(len(times), 1)), PooledShare: float64(pooled) / float64(max(len(times), 1))}
}

func startLatencies(ctx context.Context, rt *linux.Runtime, cfg SessionConfig, progress io.Writer) ([]Latency, error) {
	var out []Latency
	rows := []struct {
		name string
		cfg  session.Config
		cold int
	}{
		{"python", session.Config{}, cfg.Cold},
		{"bash", session.Config{Language: sandbox.Bash}, cfg.Cold},
	}
	if len(cfg.Preload) > 0 {
		rows = append(rows, struct {
			name string
			cfg  session.Config
			cold int
		}{"python + " + strings.Join(cfg.Preload, ","), session.Config{Preload: cfg.Preload}, max(1, cfg.Cold/2)})
	}
	for _, r := range rows {
		fmt.Fprintf(progress, "  %s: cold…\n", r.name)
		var cold []time.Duration
		for range r.cold {
			start := time.Now()
			s, err := session.New(ctx, rt, r.cfg)
			if err != nil {
				return nil, err
			}
			cold = append(cold, time.Since(start))
			s.Close()
		}
		out = append(out, summarize(r.name+", cold", cold, 0))
		if r.cfg.Language == sandbox.Bash {
			continue // bash starts in milliseconds: no pool needed
		}
		fmt.Fprintf(progress, "  %s: pool…\n", r.name)
		p, err := session.NewPool(rt, r.cfg, session.PoolOptions{Size: cfg.PoolSize})
		if err != nil {
			return nil, err
		}
		var warm []time.Duration
		pooled := 0
		for range cfg.Pooled {
			deadline := time.Now().Add(2 * time.Minute)
			for p.Ready() < 1 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			start := time.Now()
			s, err := p.Get(ctx)
			if err != nil {
				p.Close()
				return nil, err
			}
			warm = append(warm, time.Since(start))
			if s.Info().Pooled {
				pooled++
			}
			s.Close()
		}
		p.Close()
		out = append(out, summarize(r.name+", from the pool", warm, pooled))
	}
	return out, nil
}

func idleMemory(ctx context.Context, rt *linux.Runtime, n int, progress io.Writer) (*IdleMemory, error) {
	before, total, err := memAvailable()
	if err != nil {
		return nil, err
	}
	baseline := descendants()
	sessions := make([]*session.Session, n)
	defer func() {
		var wg sync.WaitGroup
		for _, s := range sessions {
			if s != nil {
				wg.Add(1)
				go func() { defer wg.Done(); s.Close() }()
			}
		}
		wg.Wait()
	}()
	start := time.Now()
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				s, err := session.New(ctx, rt, session.Config{})
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("session %d: %w", i+1, err)
				}
				sessions[i] = s
				mu.Unlock()
				if (i+1)%50 == 0 {
					fmt.Fprintf(progress, "  %d sessions…\n", i+1)
				}
			}
		}()
	}
	for i := range n {
		mu.Lock()
		failed := firstErr != nil
		mu.Unlock()
		if failed {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	m := &IdleMemory{Sessions: n, MemTotal: total, CreateTime: time.Since(start)}
	time.Sleep(time.Second) // let lazily freed memory settle
	after, _, err := memAvailable()
	if err != nil {
		return nil, err
	}
	m.Available = (before - after) / int64(n)
	var pss, rss int64
	procs := 0
	for pid := range descendants() {
		if baseline[pid] {
			continue
		}
		p, r, err := smapsRollup(pid)
		if err != nil {
			continue // ended meanwhile
		}
		pss, rss, procs = pss+p, rss+r, procs+1
	}
	m.PSS, m.RSS, m.Processes = pss/int64(n), rss/int64(n), procs/n
	for _, s := range sessions {
		if c, err := s.Execute(ctx, session.Exec{Code: "1+1"}); err == nil && c.Status == session.StatusOK {
			m.Responsive++
		}
	}
	return m, nil
}

// descendants lists the processes below this one (sandbox inits and
// their interpreters).
func descendants() map[int]bool {
	entries, _ := os.ReadDir("/proc")
	children := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(data)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		children[ppid] = append(children[ppid], pid)
	}
	out := map[int]bool{}
	queue := []int{os.Getpid()}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			if !out[c] {
				out[c] = true
				queue = append(queue, c)
			}
		}
	}
	return out
}

func smapsRollup(pid int) (pss, rss int64, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "Pss:":
			pss = v << 10
		case "Rss:":
			rss = v << 10
		}
	}
	return pss, rss, nil
}

func memAvailable() (avail, total int64, err error) {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "MemAvailable:":
			avail = v << 10
		case "MemTotal:":
			total = v << 10
		}
	}
	if avail == 0 || total == 0 {
		return 0, 0, errors.New("bench: /proc/meminfo lacks MemAvailable")
	}
	return avail, total, nil
}

// Print writes the report as three tables.
func (r *SessionReport) Print(w io.Writer) {
	fmt.Fprintf(w, "\n%s\ncoderun session benchmark: %d round trips per cell row (interleaved)\n\n", r.Host, r.Config.Cells)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "cell round trip\tp50\tp95\tmean\tp50 - baseline p50\tp50 / baseline p50\t")
	var base Latency
	for _, l := range r.Cells {
		if strings.HasSuffix(l.Name, "(baseline)") {
			base = l
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.1f\t\n", l.Name, us(l.P50), us(l.P95), us(l.Mean), us(l.P50-base.P50), float64(l.P50)/float64(base.P50))
	}
	tw.Flush()

	fmt.Fprintf(w, "\ntime to a ready session (cold: sandbox + interpreter start; pool: %d kept ready)\n\n", r.Config.PoolSize)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "session start\truns\tp50\tp95\tmean\tserved pooled\t")
	for _, l := range r.Starts {
		runs := r.Config.Cold
		if strings.HasSuffix(l.Name, "pool") {
			runs = r.Config.Pooled
		} else if strings.Contains(l.Name, "+") {
			runs = max(1, r.Config.Cold/2)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%.0f%%\t\n", l.Name, runs, short(l.P50), short(l.P95), short(l.Mean), 100*l.PooledShare)
	}
	tw.Flush()

	if m := r.Memory; m != nil {
		fmt.Fprintf(w, "\nidle python sessions held at once: %d (started in %s, %d answered a cell afterwards)\n\n", m.Sessions, m.CreateTime.Round(time.Second), m.Responsive)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "memory per idle session\tbytes\tsessions in RAM at this size\t")
		for _, row := range []struct {
			name string
			v    int64
		}{
			{fmt.Sprintf("PSS of its %d processes (/proc smaps_rollup)", m.Processes), m.PSS},
			{"RSS of its processes (shared pages counted in each)", m.RSS},
			{"drop of MemAvailable (kernel and tmpfs included)", m.Available},
		} {
			fit := "-"
			if row.v > 0 {
				fit = strconv.FormatInt(m.MemTotal/row.v, 10)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t\n", row.name, sandbox.FormatBytes(row.v), fit)
		}
		tw.Flush()
		fmt.Fprintf(w, "(RAM: %s)\n", sandbox.FormatBytes(m.MemTotal))
	}
}

// short writes durations under a millisecond in microseconds.
func short(d time.Duration) string {
	if d < time.Millisecond {
		return us(d)
	}
	return ms(d)
}

func us(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d.Nanoseconds())/1000) }
