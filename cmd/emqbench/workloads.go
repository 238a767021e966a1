package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/resp"
)

// A caller runs one batch: the k operations numbered first to first+k-1,
// sent together. It returns how many operations ran (k, or fewer when the
// queue ran dry). Each goroutine of a run has its own caller and state.
type caller func(ctx context.Context, first int64, k int) (int, error)

// errDry ends a run early, without failing it: the queue has no job left
// to claim.
var errDry = errors.New("queue empty")

// workload is one thing emqbench can measure.
type workload struct {
	method    string                                 // what one operation sends, for the report
	latPer    string                                 // "job" when the latency is per job; else per op or batch by depth
	queue     string                                 // the queue used, or ""
	prepare   func(ctx context.Context) error        // unmeasured setup (pre-fill); may be nil
	newCaller func(g int) caller                     // the state of goroutine g
	loads     func() uint64                          // SCRIPT LOADs sent so far; nil without scripts
	cleanup   func(ctx context.Context) (int, error) // removes what the run made; keys removed
	close     func()                                 // releases what the workload holds; may be nil
	// report, when set, adds the workload's own figures to the report
	// once the run is measured; its error fails the run.
	report func(r *report) error
	// run replaces the batch loop for workloads that drive themselves
	// (worker): it runs up to total operations until ctx ends, adding
	// each to done and recording latencies into lat.
	run func(ctx context.Context, total int64, done *atomic.Int64, lat *latencies) error
	// finish adds the workload's own figures to the report; may be nil.
	finish func(r *report)
}

// newWorkload builds cfg's workload on nd.
func newWorkload(ctx context.Context, nd *node, cfg config) (*workload, error) {
	switch cfg.workload {
	case "ping":
		return pingWorkload(nd), nil
	case "set", "get":
		return keyWorkload(nd, cfg), nil
	case "enqueue":
		return enqueueWorkload(ctx, nd, cfg)
	case "claim":
		return claimWorkload(ctx, nd, cfg)
	case "worker":
		return workerWorkload(ctx, nd, cfg)
	case "pubsub":
		return busWorkload(ctx, nd, cfg)
	case "e2e":
		return e2eWorkload(ctx, nd, cfg)
	case "lanes":
		return lanesWorkload(ctx, nd, cfg)
	case "flow":
		return flowWorkload(ctx, nd, cfg)
	case "cache":
		return cacheWorkload(ctx, nd, cfg)
	}
	return nil, fmt.Errorf("unknown workload %q", cfg.workload)
}

// adder appends the command of operation op to a batch.
type adder func(b *pipeline.Batch, op int64)

// plainWorkload sends one command per operation, a batch of them per
// pipeline.Batch. newAdd is called once per goroutine, so an adder may keep
// a buffer of its own; check, when set, judges each reply.
func plainWorkload(nd *node, method string, newAdd func() adder, check func(resp.Value) error) *workload {
	return &workload{
		method: method,
		newCaller: func(g int) caller {
			c := nd.conn(g)
			add := newAdd()
			var b pipeline.Batch
			return func(ctx context.Context, first int64, k int) (int, error) {
				b.Reset()
				for i := range k {
					add(&b, first+int64(i))
				}
				if err := b.Exec(ctx, c); err != nil {
					return 0, err
				}
				for i, v := range b.Replies() {
					if err := v.Err(); err != nil {
						return i, err
					}
					if check != nil {
						if err := check(v); err != nil {
							return i, err
						}
					}
				}
				return k, nil
			}
		},
	}
}

// pingWorkload sends PING.
func pingWorkload(nd *node) *workload {
	return plainWorkload(nd, "PING", func() adder {
		return func(b *pipeline.Batch, _ int64) { b.Add("PING") }
	}, nil)
}

// keyWorkload is set or get over cfg.keys keys under the run's prefix;
// get pre-fills them.
func keyWorkload(nd *node, cfg config) *workload {
	prefix := "emqbench:" + nd.runID + ":"
	value := payload(cfg.size)
	newAdd := func() adder {
		key := make([]byte, 0, len(prefix)+20)
		return func(b *pipeline.Batch, op int64) {
			key = strconv.AppendInt(append(key[:0], prefix...), op%int64(cfg.keys), 10)
			if cfg.workload == "set" {
				b.Begin(3)
				b.Arg("SET")
				b.ArgBytes(key)
				b.ArgBytes(value)
				return
			}
			b.Begin(2)
			b.Arg("GET")
			b.ArgBytes(key)
		}
	}
	var wl *workload
	if cfg.workload == "set" {
		wl = plainWorkload(nd, fmt.Sprintf("SET <key> <%d B value> over %d keys", cfg.size, cfg.keys), newAdd, nil)
	} else {
		wl = plainWorkload(nd, fmt.Sprintf("GET <key> of a %d B value over %d keys", cfg.size, cfg.keys), newAdd, func(v resp.Value) error {
			if v.Type != resp.BulkString || len(v.Str) != cfg.size {
				return fmt.Errorf("GET: unexpected reply %s (want a %d B bulk string)", v.Type, cfg.size)
			}
			return nil
		})
		wl.prepare = func(ctx context.Context) error { return fillKeys(ctx, nd, prefix, cfg.keys, value) }
	}
	wl.cleanup = func(ctx context.Context) (int, error) {
		return deleteMatching(ctx, nd, globEscape(prefix)+"*")
	}
	return wl
}

// fillKeys sets keys 0..n-1 under prefix to value, 1,000 per pipeline.
func fillKeys(ctx context.Context, nd *node, prefix string, n int, value []byte) error {
	var b pipeline.Batch
	var key []byte
	for i := 0; i < n; {
		b.Reset()
		for ; i < n && b.Len() < 1000; i++ {
			key = strconv.AppendInt(append(key[:0], prefix...), int64(i), 10)
			b.Begin(3)
			b.Arg("SET")
			b.ArgBytes(key)
			b.ArgBytes(value)
		}
		if err := b.Exec(ctx, nd.conns[0]); err != nil {
			return fmt.Errorf("pre-fill: %w", err)
		}
		for j := range b.Len() {
			if err := b.Err(j); err != nil {
				return fmt.Errorf("pre-fill: %w", err)
			}
		}
	}
	return nil
}

// payload returns size bytes of printable filler.
func payload(size int) []byte {
	p := make([]byte, size)
	for i := range p {
		p[i] = 'a' + byte(i%26)
	}
	return p
}

// measured is what the batch loop saw.
type measured struct {
	ops     int64
	elapsed time.Duration
	lat     *latencies
	stopped string // "n", "duration", "queue empty", "interrupted", "error"
	err     error
}

// measure runs the workload's callers, cfg.goroutines of them, each
// taking the next batch of cfg.depth operations until cfg.n are done,
// cfg.duration has passed, ctx ends or a caller fails.
func measure(ctx context.Context, cfg config, wl *workload, out io.Writer) measured {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var deadline time.Time
	if cfg.duration > 0 {
		deadline = time.Now().Add(cfg.duration)
		var stop context.CancelFunc
		runCtx, stop = context.WithDeadline(runCtx, deadline)
		defer stop()
	}
	m := measured{lat: newLatencies(), stopped: "n"}
	var done atomic.Int64
	prog := startProgress(out, cfg.workload, cfg.n, deadline, &done)
	start := time.Now()
	var firstErr error
	var errOnce sync.Once
	failWith := func(err error) {
		errOnce.Do(func() { firstErr = err })
		cancel()
	}
	if wl.run != nil {
		if err := wl.run(runCtx, cfg.n, &done, m.lat); err != nil {
			failWith(err)
		}
	} else {
		var next atomic.Int64
		var wg sync.WaitGroup
		for g := range cfg.goroutines {
			call := wl.newCaller(g)
			wg.Go(func() { batchLoop(runCtx, cfg, g, call, &next, &done, m.lat, failWith) })
		}
		wg.Wait()
	}
	m.elapsed = time.Since(start)
	prog.finish()
	m.ops = done.Load()
	switch {
	case errors.Is(firstErr, errDry):
		m.stopped = "queue empty"
	case firstErr != nil && ctx.Err() != nil:
		m.stopped = "interrupted"
	case firstErr != nil && !deadline.IsZero() && errors.Is(firstErr, context.DeadlineExceeded):
		m.stopped = "duration"
	case firstErr != nil:
		m.stopped, m.err = "error", firstErr
	case ctx.Err() != nil:
		m.stopped = "interrupted"
	case !deadline.IsZero() && m.ops < cfg.n:
		m.stopped = "duration"
	}
	return m
}

// batchLoop is one goroutine of measure.
func batchLoop(ctx context.Context, cfg config, g int, call caller, next, done *atomic.Int64, lat *latencies, failWith func(error)) {
	depth := int64(cfg.depth)
	for ctx.Err() == nil {
		first := next.Add(depth) - depth
		if first >= cfg.n || first < 0 {
			return
		}
		k := int(min(depth, cfg.n-first))
		t0 := time.Now()
		ran, err := call(ctx, first, k)
		d := time.Since(t0)
		if ran > 0 {
			done.Add(int64(ran))
		}
		if err != nil {
			if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				return // the deadline or an interrupt: not a failure
			}
			failWith(err)
			return
		}
		lat.record(g, d)
	}
}

// startCPUProfile starts the client's CPU profile into the file path and
// returns what stops it and closes the file; path "" profiles nothing.
func startCPUProfile(path string) (func() error, error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("-cpuprofile: %w", err)
		}
		return nil
	}, nil
}

// runWorkload builds, measures, reports and cleans up one workload.
func runWorkload(ctx context.Context, nd *node, cfg config, stdout, stderr io.Writer) int {
	wl, err := newWorkload(ctx, nd, cfg)
	if err != nil {
		fail(stderr, "%s: %v", cfg.workload, err)
		var ue usageErr
		if errors.As(err, &ue) {
			return exitUsage
		}
		return exitFailed
	}
	if wl.close != nil {
		defer wl.close()
	}
	code := exitOK
	r := &report{
		Workload: cfg.workload, Server: nd.desc, Protocol: nd.probe.Protocol(),
		Conns: cfg.conns, Goroutines: cfg.goroutines, Depth: cfg.depth, Size: cfg.size,
		Queue: wl.queue, Method: wl.method, Cleanup: "nothing to remove",
	}
	if cfg.keep && wl.cleanup != nil {
		r.Cleanup = "kept (-keep)"
	}
	if wl.prepare != nil {
		if isTerminal(stdout) {
			fmt.Fprintf(stdout, "\r%s: preparing (pre-fill, not measured)\033[K", cfg.workload)
		}
		err = wl.prepare(ctx)
		if isTerminal(stdout) {
			fmt.Fprint(stdout, "\r\033[K")
		}
	}
	if err == nil {
		var loads0 uint64
		if wl.loads != nil {
			loads0 = wl.loads()
		}
		srv0 := serverCPU(ctx, nd)
		stopProfile, perr := startCPUProfile(cfg.cpuprofile)
		if perr != nil {
			fail(stderr, "%s: %v", cfg.workload, perr)
			return exitUsage
		}
		before := takeUsage()
		m := measure(ctx, cfg, wl, stdout)
		after := takeUsage()
		if perr := stopProfile(); perr != nil {
			fail(stderr, "%s: %v", cfg.workload, perr)
			code = exitFailed
		}
		srv1 := serverCPU(ctx, nd)
		r.Ops, r.ElapsedSec, r.Stopped = m.ops, m.elapsed.Seconds(), m.stopped
		if m.elapsed > 0 {
			r.OpsPerSec = float64(m.ops) / m.elapsed.Seconds()
		}
		per := "op"
		switch {
		case wl.latPer != "":
			per = wl.latPer
		case cfg.depth > 1:
			per = "batch"
		}
		r.fillLatency(m.lat.merged(), per)
		r.fillUsage(before, after)
		r.fillServerCPU(srv0, srv1)
		if wl.loads != nil {
			n := wl.loads() - loads0
			r.ScriptLoads = &n
		}
		if wl.finish != nil {
			wl.finish(r)
		}
		err = m.err
		if wl.report != nil {
			if rerr := wl.report(r); rerr != nil && err == nil {
				err = rerr
			}
		}
	} else {
		r.Stopped, err = "error", fmt.Errorf("setup: %w", err)
	}
	if ctx.Err() != nil {
		r.Stopped, err = "interrupted", nil
	}
	if err != nil {
		r.Error = oneLine(err)
		code = exitFailed
	}
	if !cfg.keep && wl.cleanup != nil {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		n, cerr := wl.cleanup(cctx)
		cancel()
		r.Cleanup = fmt.Sprintf("removed %d keys", n)
		if cerr != nil {
			r.Cleanup += "; cleanup failed: " + oneLine(cerr)
			code = exitFailed
		}
	}
	r.write(stdout, cfg.json)
	if r.Error != "" {
		fail(stderr, "%s: %s", cfg.workload, r.Error)
	}
	return code
}

// usageErr is a workload error that is the user's to fix (exit 2).
type usageErr struct{ error }

// oneLine folds an error's text onto one line.
func oneLine(err error) string {
	s := err.Error()
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' || s[i] == '\r' {
			out = append(out, ' ')
			continue
		}
		out = append(out, s[i])
	}
	return string(out)
}

// unbounded is cfg.n when only -duration bounds the run.
const unbounded = math.MaxInt64
