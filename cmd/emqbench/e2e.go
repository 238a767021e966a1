package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/jobs"
)

// The e2e workload: producers enqueue while a worker claims, runs and
// completes, on one queue. Every job carries its index and the time its
// enqueue call started in the first e2eHeader bytes of its payload, so the
// handler and the completion event can tell which job they see and how
// long it has waited.
const (
	e2eChunk    = 100              // jobs per enqueue call without -depth
	e2eHeader   = 16               // payload bytes: index, then enqueue stamp (Unix ns)
	e2eLease    = 30 * time.Second // no lease runs out in a run that is not lost
	e2eStall    = 10 * time.Second // no completion this long, producers done: the rest is lost
	e2ePageBits = 16
	e2ePageSize = 1 << e2ePageBits
	e2eMaxPages = 1 << 14 // 2^30 jobs
)

// errInjected is the failure -fail makes a handler return on a job's first
// attempt.
var errInjected = errors.New("emqbench: injected failure")

// e2eJob is what the run learns of one job, by index. It holds no
// pointer: the table of a long run is millions of jobs, which the garbage
// collector would otherwise scan on every cycle (and every id stored would
// pay a write barrier), a cost of the harness, not of the client measured.
// The ids are kept as their 64-bit hashes (idHash).
type e2eJob struct {
	id     uint64       // idHash of the id its enqueue returned (written by the producer)
	doneID uint64       // idHash of the id of its first completion (written by that event)
	runs   atomic.Int32 // handler starts
	done   atomic.Int32 // completions reported
	failed atomic.Int32 // failures injected

	enq    atomic.Int32 // -failover: jobEnqueued or jobAmbiguous (0: not sent)
	settle atomic.Int32 // -failover: a completion of it was sent, its answer lost
}

type e2ePage [e2ePageSize]e2eJob

// e2eTable holds the run's jobs by index, a page at a time, so that a run
// bounded by -duration needs no size up front.
type e2eTable struct {
	mu    sync.Mutex // serialises page allocation
	pages [e2eMaxPages]atomic.Pointer[e2ePage]
}

// reserve makes room for the indices below end.
func (t *e2eTable) reserve(end int64) error {
	last := (end - 1) >> e2ePageBits
	if last >= e2eMaxPages {
		return fmt.Errorf("more than %d jobs in one run", int64(e2eMaxPages)*e2ePageSize)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for p := last; p >= 0 && t.pages[p].Load() == nil; p-- {
		t.pages[p].Store(new(e2ePage))
	}
	return nil
}

// prefault makes room for the indices below end and touches every page
// of the memory: a run of a known size takes its table before it is
// measured, for the first write to each page (a page fault, and the
// runtime zeroing a fresh page of the table) was ~4% of the client's CPU
// in the native e2e profile, a cost of the harness.
func (t *e2eTable) prefault(end int64) error {
	if err := t.reserve(end); err != nil {
		return err
	}
	const step = 4096 / int64(unsafe.Sizeof(e2eJob{}))
	for i := int64(0); i < end; i += step {
		t.at(i).id = 0
	}
	return nil
}

// histShard is the latency shard job i records into: one for a run of
// e2ePageSize consecutive jobs. Spreading consecutive jobs over every
// shard (by i itself) kept the hot counts of all 16 histograms of both
// latencies in the cache at once, and the misses cost ~8% of the client's
// CPU in the native e2e profile; the handlers running about consecutive
// jobs at a time rarely wait for each other's shard.
func histShard(i int64) int { return int(i >> e2ePageBits) }

// idHash is the hash of a job id (hash/maphash, one seed per process),
// which e2eJob keeps in place of the id: two different ids of one run
// hash alike with odds of about 2^-64 per pair. FNV-1a, a multiply per
// byte, was ~3% of the client's CPU in the native e2e profile (two ids
// hashed per job), a cost of the harness.
func idHash(id string) uint64 { return maphash.String(idSeed, id) }

var idSeed = maphash.MakeSeed()

// wallClock is the wall time in Unix ns as the e2e run reads it per job
// (the enqueue stamp, a handler's start, a round's completions): from the
// monotonic clock alone, advanced from the process's start, which is one
// clock read where time.Now makes two (~80 ns a time.Now on a VM's
// kvm-clock), a cost of the harness.
func wallClock() int64 { return clockBase.UnixNano() + int64(time.Since(clockBase)) }

var clockBase = time.Now()

// at returns job i, or nil when i was never reserved.
func (t *e2eTable) at(i int64) *e2eJob {
	if i < 0 || i>>e2ePageBits >= e2eMaxPages {
		return nil
	}
	p := t.pages[i>>e2ePageBits].Load()
	if p == nil {
		return nil
	}
	return &p[i&(e2ePageSize-1)]
}

// e2eReport is the e2e part of a report.
type e2eReport struct {
	Producers int     `json:"producers"`
	InFlight  int     `json:"inflight"`              // enqueue calls each producer keeps in flight
	Enqueue   string  `json:"enqueue"`               // the verb the producers call
	Chunk     int     `json:"jobs_per_enqueue_call"` // payloads per call
	Rate      float64 `json:"rate_limit"`            // jobs/s; 0 unbounded
	Handlers  int     `json:"handlers"`

	Enqueued   int64 `json:"enqueued"`
	Completed  int64 `json:"completed"`   // distinct jobs seen completed
	Lost       int64 `json:"lost"`        // enqueued, never seen completed
	Duplicates int64 `json:"duplicates"`  // completions beyond a job's first
	ExtraRuns  int64 `json:"extra_runs"`  // handler runs beyond one per job and one per injected failure
	Failed     int64 `json:"failed_runs"` // injected failures
	Retried    int64 `json:"retried"`     // retry events

	WorkerCalls uint64  `json:"worker_calls"`  // the worker's server calls
	JobsPerCall float64 `json:"jobs_per_call"` // completed jobs per worker call
	// JobsPerClaim is the jobs claimed per claiming call of the plain
	// workers (0 with -jobs): short of the claim's size (Concurrency +
	// Prefetch), the queue ran dry, and the worker waited on the producers.
	JobsPerClaim float64 `json:"jobs_per_claim"`
	// ProducerBusy is the time the producers' goroutines spent inside
	// their enqueue calls, over the run's wall time and their number:
	// near 1, every producer was always waiting for a reply, and the
	// run's jobs/s is the producers' call rate, not the worker's.
	ProducerBusy float64 `json:"producer_busy"`

	ToStart latencyReport `json:"enqueue_to_start"` // first attempt's handler start
	ToDone  latencyReport `json:"enqueue_to_done"`  // completion acknowledged

	Failover *failoverReport `json:"failover,omitempty"` // -failover only
}

// e2eRun is one e2e run's shared state.
type e2eRun struct {
	cfg    config
	qq     *queues        // the workers' queues, one per connection
	pconns []sender       // one per producer
	pqs    [][]*emq.Queue // per producer, every member queue
	chunk  int
	size   int

	jobs     e2eTable
	next     atomic.Int64 // next index to enqueue
	enqueued atomic.Int64 // jobs whose enqueue answered
	prodDone atomic.Int32 // producers finished
	inCall   atomic.Int64 // ns the producers spent inside enqueue calls
	prodEnd  atomic.Int64 // when the last producer goroutine returned, Unix ns
	claims   uint64       // the plain workers' claiming calls (shutdown)
	claimed  uint64       // the jobs they claimed

	completed, duplicates, retried atomic.Int64
	lastDone                       atomic.Int64 // Unix ns of the last first completion
	toStart                        *latencies

	start   time.Time
	workers []*emq.Worker
	clocks  []*roundClock // one per worker
	server  *jobs.Server  // with -jobs, in place of workers
	rep     e2eReport

	total int64          // the jobs to run (-n; unbounded with -after-switch)
	fo    failoverCounts // -failover only

	// With a sentinel URL: the master set's primary now, and at the start.
	primary      func() string
	firstPrimary string
}

// e2eWorkload measures producers and a worker at once on one queue.
func e2eWorkload(ctx context.Context, nd *node, cfg config) (*workload, error) {
	qq, err := openQueues(ctx, nd, cfg)
	if err != nil {
		return nil, err
	}
	r := &e2eRun{cfg: cfg, qq: qq, chunk: e2eChunk, size: max(cfg.size, e2eHeader), toStart: newLatencies()}
	if cfg.depthSet {
		r.chunk = cfg.depth
	}
	if nd.sentinel != nil {
		ms := nd.sentinel.MasterSet()
		r.primary, r.firstPrimary = ms.Primary, ms.Primary()
	}
	wl := &workload{
		method: r.method(),
		latPer: "e2e",
		queue:  qq.name,
		loads:  qq.loads,
		close:  r.close,
		run: func(ctx context.Context, total int64, done *atomic.Int64, lat *latencies) error {
			return r.run(ctx, total, done, lat)
		},
		report:  r.fill,
		cleanup: qq.cleanup(nd),
	}
	if cfg.n != unbounded {
		wl.prepare = func(context.Context) error { return r.jobs.prefault(cfg.n) }
	}
	for range cfg.producers {
		c, err := nd.dial(ctx)
		if err != nil {
			r.close()
			return nil, fmt.Errorf("producer connection: %w", err)
		}
		r.pconns = append(r.pconns, c)
		var members []*emq.Queue
		for _, m := range qq.members {
			q, err := emq.Open(ctx, c, m, emq.WithIDGenerator(emq.DefaultIDGenerator()), emq.WithExecutorChoice(r.cfg.executor))
			if err != nil {
				r.close()
				return nil, err
			}
			members = append(members, q)
		}
		r.pqs = append(r.pqs, members)
	}
	return wl, nil
}

// method describes what the run does, for the report.
func (r *e2eRun) method() string {
	verb := "EnqueueBulk (enqueue_batch)"
	if r.cfg.enqueue == "batch" {
		verb = "EnqueueBatch (pipelined enqueue)"
	}
	rate := "unbounded"
	if r.cfg.rate > 0 {
		rate = fmt.Sprintf("%.0f jobs/s", r.cfg.rate)
	}
	consumer := "emq.Worker"
	if r.cfg.jobs {
		consumer = "jobs.Server (3 task types, a jobs.Mux, 3 queues weighted 3:2:1)"
	}
	m := fmt.Sprintf("%d producer(s) %s of %d jobs, rate %s; %s of %d handlers (no-op", r.cfg.producers, verb, r.chunk, rate, consumer, r.cfg.goroutines)
	if r.cfg.fail > 0 {
		m += fmt.Sprintf(", %.3g of jobs fail their first attempt", r.cfg.fail)
	}
	m += "), poll 1-5 ms"
	if r.qq.native {
		m += "; native executor (EMQ.* commands)"
	} else {
		m += "; scripted executor (EVALSHA)"
	}
	if n := len(r.qq.members); n > 1 {
		if r.cfg.jobs {
			m += fmt.Sprintf("; over %d queues (every producer call to the next)", n)
		} else {
			m += fmt.Sprintf("; sharded over %d member queues (a worker each, every producer call to the next member)", n)
		}
	}
	return m
}

// close closes the producers' connections.
func (r *e2eRun) close() {
	for _, c := range r.pconns {
		c.Close()
	}
	r.pconns = nil
}

// failing reports whether job i's first attempt fails: a fixed pseudo-
// random choice of cfg.fail of the jobs.
func (r *e2eRun) failing(i int64) bool {
	if r.cfg.fail <= 0 {
		return false
	}
	x := uint64(i) + 0x9e3779b97f4a7c15 // splitmix64
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11)/(1<<53) < r.cfg.fail
}

// decode reads a job's index and enqueue stamp from its payload.
func (r *e2eRun) decode(p []byte) (*e2eJob, int64, int64) {
	if len(p) < e2eHeader {
		return nil, 0, 0
	}
	i := int64(binary.BigEndian.Uint64(p))
	return r.jobs.at(i), i, int64(binary.BigEndian.Uint64(p[8:]))
}

// run starts the workers, then the producers, and waits until every job
// enqueued has completed: total jobs, or as many as the producers
// enqueued before -duration ran out.
func (r *e2eRun) run(ctx context.Context, total int64, done *atomic.Int64, lat *latencies) error {
	failed := make(chan error, 1)
	failWith := func(err error) {
		select {
		case failed <- err:
		default:
		}
	}
	start := r.startWorkers
	if r.cfg.jobs {
		start = r.startServer
	}
	if r.cfg.afterSwitch > 0 {
		total = unbounded // enoughAcross ends the producers
	}
	r.total = total
	if err := start(done, lat, failWith); err != nil {
		return err
	}
	defer r.shutdown()

	r.start = time.Unix(0, wallClock()) // the clock of the stamps and lastDone
	r.lastDone.Store(r.start.UnixNano())
	pctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for p := range r.cfg.producers {
		for range r.inflight() {
			wg.Go(func() {
				if err := r.produce(pctx, p, total); err != nil {
					failWith(err)
				}
				if int(r.prodDone.Add(1)) == r.cfg.producers*r.inflight() {
					r.prodEnd.Store(time.Now().UnixNano())
				}
			})
		}
	}
	defer wg.Wait()
	defer stop()

	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var short error // -after-switch: the run went past -switch-within
	for {
		select {
		case err := <-failed:
			return err
		case <-tick.C:
		}
		if errors.Is(ctx.Err(), context.Canceled) {
			return ctx.Err() // interrupted
		}
		if short == nil {
			if short = r.switchShort(); short != nil {
				stop() // the producers end; what they enqueued is drained
			}
		}
		if int(r.prodDone.Load()) < r.cfg.producers*r.inflight() {
			continue
		}
		if r.drained(ctx) {
			return short
		}
		if time.Since(time.Unix(0, r.lastDone.Load())) > e2eStall {
			return short // the rest is lost: fill reports it
		}
	}
}

// startWorkers starts one worker per connection of the run.
func (r *e2eRun) startWorkers(done *atomic.Int64, lat *latencies, failWith func(error)) error {
	handler := emq.HandlerFunc(func(_ context.Context, j *emq.Job) error {
		return r.handle(j.ID, j.Payload, j.Token)
	})
	onEvent := func(clock *roundClock, ev emq.Event) {
		if r.cfg.failover && r.failoverEvent(ev) {
			return
		}
		switch ev.Kind {
		case emq.EventCompleted:
			r.completedJob(ev.Job.ID, ev.Job.Payload, clock.now(), done, clock.recorder(lat), failWith)
		case emq.EventRetried:
			if !errors.Is(ev.Err, errInjected) {
				failWith(fmt.Errorf("worker: job %s retried: %v", ev.Job.ID, ev.Err))
			}
			r.retried.Add(1)
		case emq.EventError, emq.EventDead, emq.EventStale, emq.EventLeaseLost, emq.EventAbandoned:
			failWith(fmt.Errorf("worker: %s %s %s: %v", ev.Kind, ev.Op, ev.Job.ID, ev.Err))
		}
	}
	per := (r.cfg.goroutines + len(r.qq.qs) - 1) / len(r.qq.qs)
	for _, q := range r.qq.qs {
		clock := new(roundClock)
		r.clocks = append(r.clocks, clock)
		wc := emq.WorkerConfig{
			Concurrency: per, Lease: e2eLease, OnEvent: func(ev emq.Event) { onEvent(clock, ev) },
			PollMin: time.Millisecond, PollMax: 5 * time.Millisecond,
			Backoff: func(int64, error) time.Duration { return 0 },
		}
		if r.cfg.failover {
			failoverWorker(&wc)
		}
		w, err := emq.NewWorker(q, handler, wc)
		if err == nil {
			clock.w = w // before Start: no event comes sooner
			err = w.Start()
		}
		if err != nil {
			r.shutdown()
			return err
		}
		r.workers = append(r.workers, w)
	}
	return nil
}

// handle is the handler's work on job id: body holds its index and
// enqueue stamp; the first attempt of a failing job fails.
func (r *e2eRun) handle(id string, body []byte, attempt int64) error {
	now := wallClock()
	e, i, stamp := r.decode(body)
	if e == nil {
		return fmt.Errorf("job %s of no index", id)
	}
	e.runs.Add(1)
	if attempt == 1 {
		r.toStart.record(histShard(i), time.Duration(now-stamp))
		if r.failing(i) {
			e.failed.Add(1)
			return errInjected
		}
	}
	return nil
}

// roundClock is the time of a worker's completions, read once per round:
// the worker reports a round's completions together, from its round loop
// (the only caller of now), as the one reply that settled them arrives,
// so they share that reply's time; a clock read per completion was ~5% of
// the client's CPU in the native e2e profile, a cost of the harness.
//
// Its completions' latencies are coalesced: the jobs of one enqueue call
// share their stamp, and those that one reply settled share their time,
// so runs of equal latencies are recorded once each, with their count (a
// histogram record per job was ~2% of the client's CPU in the native e2e
// profile, a cost of the harness). shutdown flushes what is kept.
type roundClock struct {
	w     *emq.Worker
	round uint64 // the worker's Rounds when at was read
	at    int64  // Unix ns

	lat   *latencies
	shard int           // of the latencies kept,
	d     time.Duration // their value
	n     int64         // and their count
}

// now is the time of the round whose completions are being reported: the
// worker counts a round before it sends it, so Rounds changes between
// the reports of two rounds and not within one.
func (c *roundClock) now() int64 {
	if n := c.w.Stats().Rounds; n != c.round || c.at == 0 {
		c.round, c.at = n, wallClock()
	}
	return c.at
}

// recorder is how a completion's latency is recorded: into lat, or,
// from a worker's events, through its roundClock (see coalesce).
type recorder interface {
	record(shard int, d time.Duration)
}

// recorder returns c recording into lat.
func (c *roundClock) recorder(lat *latencies) recorder {
	c.lat = lat
	return c
}

// record keeps d for shard, recorded together with the equal ones that
// follow it (coalesce).
func (c *roundClock) record(shard int, d time.Duration) {
	if c.n > 0 && (c.shard != shard || c.d != d) {
		c.flush()
	}
	c.shard, c.d = shard, d
	c.n++
}

// flush records the latencies kept.
func (c *roundClock) flush() {
	if c.n > 0 {
		c.lat.recordN(c.shard, c.d, c.n)
		c.n = 0
	}
}

// completedJob records the completion at now (Unix ns) of job id whose
// body holds its index and stamp.
func (r *e2eRun) completedJob(id string, body []byte, now int64, done *atomic.Int64, lat recorder, failWith func(error)) {
	e, i, stamp := r.decode(body)
	if e == nil {
		failWith(fmt.Errorf("completed job %s of no index", id))
		return
	}
	if e.done.Add(1) > 1 {
		r.duplicates.Add(1)
		return
	}
	e.doneID = idHash(id)
	lat.record(histShard(i), time.Duration(now-stamp))
	r.lastDone.Store(now)
	r.completed.Add(1)
	done.Add(1)
}

// shutdown stops the workers, waiting up to ten seconds in all.
func (r *e2eRun) shutdown() {
	r.shutdownServer()
	shutdownAll(r.workers)
	for _, c := range r.clocks {
		c.flush() // the round loops are done: no event comes now
	}
	for _, w := range r.workers {
		st := w.Stats()
		r.rep.WorkerCalls += st.Rounds
		r.claims += st.Claims
		r.claimed += st.Claimed
	}
	r.workers = nil
}

// inflight is how many goroutines run produce for each producer, sharing
// its connection (which pipelines their calls): -inflight, but 1 across a
// failover, whose accounting follows one call at a time per producer.
func (r *e2eRun) inflight() int {
	if r.cfg.failover {
		return 1
	}
	return r.cfg.inflight
}

// produce is one of producer p's -inflight goroutines: it enqueues chunks
// of jobs until total are enqueued, -duration has run out (ctx's deadline)
// or ctx is cancelled. The goroutines of a producer share its connection,
// so while one waits for its reply the next call is already on the wire
// and the server never waits for the producer's round trip (with one call
// in flight the producer spent all of the run inside its calls, and the
// worker's claims came back short of jobs).
// Calls are made with a context that the deadline does not cancel: a call
// cut off halfway would leave jobs enqueued that the run never heard of.
func (r *e2eRun) produce(ctx context.Context, p int, total int64) error {
	members := r.pqs[p]
	call := context.WithoutCancel(ctx)
	off := r.envelopeLen()
	size := off + r.size
	slab := make([]byte, r.chunk*size)
	payloads := make([][]byte, r.chunk)
	for i := range payloads {
		payloads[i] = slab[i*size : (i+1)*size : (i+1)*size]
		copy(payloads[i][off+e2eHeader:], payload(r.size)[e2eHeader:])
	}
	for ctx.Err() == nil {
		first := r.next.Add(int64(r.chunk)) - int64(r.chunk)
		if first >= total || first < 0 || r.enoughAcross(first) {
			return nil
		}
		k := int(min(int64(r.chunk), total-first))
		if err := r.jobs.reserve(first + int64(k)); err != nil {
			return err
		}
		if r.cfg.rate > 0 {
			due := r.start.Add(time.Duration(float64(first) / r.cfg.rate * float64(time.Second)))
			if d := time.Until(due); d > 0 {
				select {
				case <-time.After(d):
				case <-ctx.Done():
					return nil
				}
			}
		}
		stamp := uint64(wallClock())
		for i := range k {
			r.envelope(payloads[i], first+int64(i))
			binary.BigEndian.PutUint64(payloads[i][off:], uint64(first)+uint64(i))
			binary.BigEndian.PutUint64(payloads[i][off+8:], stamp)
		}
		// Each call's jobs go to one member queue, round robin by call.
		q := members[int(first/int64(r.chunk))%len(members)]
		if r.cfg.failover {
			if err := r.enqueueAcross(ctx, call, q, first, payloads[:k]); err != nil {
				return fmt.Errorf("producer %d: %w", p, err)
			}
			continue
		}
		t0 := time.Now()
		res, err := r.send(call, q, payloads[:k])
		r.inCall.Add(int64(time.Since(t0)))
		if err != nil {
			return fmt.Errorf("producer %d: %w", p, err)
		}
		for i, x := range res {
			if x.Err != nil {
				return fmt.Errorf("producer %d: enqueue: %w", p, x.Err)
			}
			r.jobs.at(first + int64(i)).id = idHash(x.ID)
		}
		r.enqueued.Add(int64(k))
	}
	return nil
}

// send enqueues payloads on q, by the -enqueue verb.
func (r *e2eRun) send(ctx context.Context, q *emq.Queue, payloads [][]byte) ([]emq.EnqueueResult, error) {
	if r.cfg.enqueue == "batch" {
		return q.EnqueueBatch(ctx, payloads)
	}
	return q.EnqueueBulk(ctx, payloads)
}

// fill completes the report: the run's own wall time (first enqueue to
// last completion), and what became of every job enqueued. Lost or
// duplicated jobs fail the run.
func (r *e2eRun) fill(rep *report) error {
	x := &r.rep
	x.Producers, x.Chunk, x.Rate, x.Handlers = r.cfg.producers, r.chunk, r.cfg.rate, r.cfg.goroutines
	x.InFlight = r.inflight()
	x.Enqueue = "EnqueueBulk"
	if r.cfg.enqueue == "batch" {
		x.Enqueue = "EnqueueBatch"
	}
	x.Enqueued, x.Completed = r.enqueued.Load(), r.completed.Load()
	x.Duplicates, x.Retried = r.duplicates.Load(), r.retried.Load()
	var mismatch int64
	if r.cfg.failover {
		mismatch = r.fillFailover(x)
	}
	for i := range x.Enqueued {
		if r.cfg.failover {
			break // fillFailover counted
		}
		e := r.jobs.at(i)
		switch {
		case e == nil || e.done.Load() == 0:
			x.Lost++
			continue
		case e.doneID != e.id:
			mismatch++
		}
		x.Failed += int64(e.failed.Load())
		x.ExtraRuns += int64(e.runs.Load()) - 1 - int64(e.failed.Load())
	}
	if x.WorkerCalls > 0 {
		x.JobsPerCall = float64(x.Completed) / float64(x.WorkerCalls)
	}
	if r.claims > 0 {
		x.JobsPerClaim = float64(r.claimed) / float64(r.claims)
	}
	if span := r.prodEnd.Load() - r.start.UnixNano(); span > 0 {
		x.ProducerBusy = float64(r.inCall.Load()) / float64(span) / float64(x.Producers*x.InFlight)
	}
	x.ToDone = rep.Latency
	h := r.toStart.merged()
	var tmp report
	tmp.fillLatency(h, "job")
	x.ToStart = tmp.Latency
	if end := time.Unix(0, r.lastDone.Load()); x.Completed > 0 && end.After(r.start) {
		rep.ElapsedSec = end.Sub(r.start).Seconds()
		rep.OpsPerSec = float64(x.Completed) / rep.ElapsedSec
	}
	rep.E2E = x
	switch {
	case x.Lost > 0 || x.Duplicates > 0:
		return fmt.Errorf("%d of %d jobs lost, %d duplicate completions", x.Lost, x.Enqueued, x.Duplicates)
	case mismatch > 0:
		return fmt.Errorf("%d jobs completed under another id than their enqueue returned", mismatch)
	}
	return nil
}
