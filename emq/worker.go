package emq

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echomq/echomq-go/internal/outbox"
	"github.com/echomq/echomq-go/internal/wire"
)

// WorkerConfig configures a [Worker]. A zero field takes its default; a
// negative interval disables what it paces.
type WorkerConfig struct {
	// Concurrency is how many handlers run at once. Default 8.
	Concurrency int
	// Lease is how long a claim holds a job before the reaper may take it
	// back; a running handler's lease is extended, until its Timeout.
	// Default 30 s.
	Lease time.Duration
	// Timeout is the longest a handler runs on one job. When it passes,
	// the handler's context ends (its cause matches [ErrJobTimeout]), the
	// lease is extended no more, and the job is retried as a failure
	// whose error text says it timed out ("emq: job timed out after
	// 30m0s"): with backoff, counted in its attempts, dead after
	// MaxAttempts like any failure. A job's lease is thus extended in all
	// at most Timeout, and held at most Timeout plus one Lease even when
	// the retry cannot be sent (the reaper then takes the job back).
	//
	// A handler that ignores its context and runs on past its timeout
	// loses its job all the same: the slot it ran in is given at once to
	// a new handler goroutine, so Concurrency handlers still run; its
	// result, when it returns, is dropped (the job was retried, and the
	// fencing token would make it stale anyway); and until it returns it
	// is counted in [WorkerStats].Hung. Every timeout is an
	// [EventTimedOut]. Default 30 min; negative is an error: every job
	// has a timeout, a long one if need be.
	Timeout time.Duration
	// TimeoutFor, when set, is the timeout of each job, called before its
	// handler starts (from the handler's goroutine; it must not block): a
	// job-by-job override of Timeout, by its payload say. A result of 0
	// or less takes Timeout.
	TimeoutFor func(job *Job) time.Duration
	// MaxAttempts is the attempts after which a failing job goes to dead
	// (retry and reap). Default 25.
	MaxAttempts int
	// BackoffBase and BackoffMax shape the retry delay: BackoffBase
	// doubled per attempt, at most BackoffMax, with equal jitter (half
	// fixed, half random). Defaults 1 s and 10 min.
	BackoffBase, BackoffMax time.Duration
	// Backoff, when set, replaces that rule: the delay before retrying a
	// job whose attempt-th attempt failed with err. 0 (or less) requeues
	// at once; any longer delay is kept to the millisecond, rounded up,
	// up to math.MaxInt64 (about 292 years, still a valid due time).
	Backoff func(attempt int64, err error) time.Duration
	// Retention keeps a completed job's row (state completed) this long;
	// 0 deletes it at once.
	Retention time.Duration
	// ClaimBatch is the most jobs one round claims; a round claims no more
	// than its free handlers and its prefetch. Default Concurrency +
	// Prefetch.
	ClaimBatch int
	// Prefetch is the most jobs the worker claims ahead of its free
	// handlers, so that a handler that finishes starts its next job at
	// once and few handlers still fill big rounds. The worker sizes it to
	// what its handlers finish in about two round trips (nothing for
	// handlers that are slow next to a round trip), up to this. The jobs
	// still waiting when the worker stops are released: given back to
	// pending, their attempts kept. Default 256; negative disables.
	Prefetch int
	// PollMin and PollMax bound the wait after a claim that found nothing:
	// it starts at PollMin and doubles to PollMax while the queue stays
	// empty. Defaults 5 ms and 1 s.
	PollMin, PollMax time.Duration
	// PromoteInterval and ReapInterval pace the background promoter (due
	// delayed jobs to pending) and reaper (expired leases back to pending),
	// each with ±20% jitter. Defaults 1 s and 5 s; negative disables.
	PromoteInterval, ReapInterval time.Duration
	// MaintainLimit is the most jobs one promote, reap or trim call
	// moves; a full call is followed by another at once. Default 1000.
	MaintainLimit int
	// DeadMaxAge and DeadMaxCount are the dead set's retention: a trimmer
	// removes the dead jobs, ids and rows, that died DeadMaxAge ago or
	// more, and the oldest beyond the newest DeadMaxCount
	// ([Queue.TrimDead]). Defaults 90 days and 10,000; a negative value
	// is no bound of that kind.
	DeadMaxAge   time.Duration
	DeadMaxCount int
	// TrimInterval paces the trimmer, with ±20% jitter. Default 1 min;
	// negative disables it.
	TrimInterval time.Duration
	// ExtendInterval is how often a running handler's lease is extended
	// (by Lease). Default Lease/3; negative disables.
	ExtendInterval time.Duration
	// AckBatch is the most outcomes (completions, retries, releases) one
	// round settles; more wait for the next round, sent at once. Default
	// 1000.
	AckBatch int
	// ShutdownTimeout bounds Run's wait for running handlers. Default 10 s.
	ShutdownTimeout time.Duration
	// Middleware wraps the handler, the first outermost.
	Middleware []Middleware
	// OnEvent, when set, is told every outcome, from the worker's
	// goroutines, concurrently; it must not block.
	OnEvent func(Event)
}

// withDefaults fills the zero fields and checks the rest.
func (c WorkerConfig) withDefaults() (WorkerConfig, error) {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 8
	}
	def(&c.Lease, 30*time.Second)
	if c.Lease < time.Millisecond {
		return c, &ArgError{Arg: "Lease", Reason: "under a millisecond"}
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 25
	}
	if c.MaxAttempts < 0 {
		return c, &ArgError{Arg: "MaxAttempts", Reason: "negative"}
	}
	def(&c.Timeout, 30*time.Minute)
	if c.Timeout < 0 {
		return c, &ArgError{Arg: "Timeout", Reason: "negative: every job has a timeout"}
	}
	def(&c.BackoffBase, time.Second)
	def(&c.BackoffMax, 10*time.Minute)
	if c.Retention < 0 {
		return c, &ArgError{Arg: "Retention", Reason: "negative"}
	}
	if c.Prefetch == 0 {
		c.Prefetch = 256
	}
	c.Prefetch = max(c.Prefetch, 0)
	if c.ClaimBatch <= 0 {
		c.ClaimBatch = c.Concurrency + c.Prefetch
	}
	def(&c.PollMin, 5*time.Millisecond)
	def(&c.PollMax, time.Second)
	c.PollMin = max(c.PollMin, time.Millisecond)
	c.PollMax = max(c.PollMax, c.PollMin)
	def(&c.PromoteInterval, time.Second)
	def(&c.ReapInterval, 5*time.Second)
	if c.MaintainLimit <= 0 {
		c.MaintainLimit = 1000
	}
	def(&c.DeadMaxAge, 90*24*time.Hour)
	if c.DeadMaxCount == 0 {
		c.DeadMaxCount = 10_000
	}
	def(&c.TrimInterval, time.Minute)
	def(&c.ExtendInterval, c.Lease/3)
	if c.ExtendInterval >= c.Lease {
		return c, &ArgError{Arg: "ExtendInterval", Reason: "not shorter than Lease: the lease would run out first"}
	}
	if c.AckBatch <= 0 {
		c.AckBatch = 1000
	}
	def(&c.ShutdownTimeout, 10*time.Second)
	return c, nil
}

// backoff returns the delay before retrying a job whose attempt failed:
// Backoff's, or the default rule's when there is no Backoff or it
// panicked (then p is the recovered panic).
func (c *WorkerConfig) backoff(attempt int64, err error) (d time.Duration, p *PanicError) {
	if c.Backoff != nil {
		if d, p = c.userBackoff(attempt, err); p == nil {
			return d, nil
		}
	}
	return c.defaultBackoff(attempt), p
}

// userBackoff calls Backoff, recovering its panic.
func (c *WorkerConfig) userBackoff(attempt int64, err error) (d time.Duration, p *PanicError) {
	defer func() {
		if r := recover(); r != nil {
			p = &PanicError{Value: r, Stack: debug.Stack(), Func: "Backoff"}
		}
	}()
	return c.Backoff(attempt, err), nil
}

// defaultBackoff is the rule of BackoffBase and BackoffMax.
func (c *WorkerConfig) defaultBackoff(attempt int64) time.Duration {
	d := c.BackoffBase
	for i := int64(1); i < attempt && d < c.BackoffMax; i++ {
		d = twice(d, c.BackoffMax)
	}
	d = min(d, c.BackoffMax)
	if half := int64(d / 2); half > 0 {
		d = time.Duration(half + rand.Int64N(half+1))
	}
	return d
}

// jitter returns d scaled by a random factor in [0.8, 1.2), at most the
// longest duration.
func jitter(d time.Duration) time.Duration {
	return scale(d, 0.8+0.4*rand.Float64())
}

// WorkerStats counts a worker's outcomes since it was made.
type WorkerStats struct {
	// Rounds counts the settle_claim calls; Claims those that claimed,
	// AckBatches those that settled outcomes (a round may do both).
	Rounds, Claims, AckBatches                                    uint64
	Claimed, Completed, Retried, Dead, Stale, Abandoned, Released uint64 // jobs
	Panics, LeaseLost, Errors, Promoted, Reaped                   uint64 // events; jobs moved by promote and reap
	Trimmed                                                       uint64 // dead jobs removed by the trimmer
	// TimedOut counts the jobs whose handler ran past its timeout
	// ([WorkerConfig].Timeout). Hung is not a count since the worker was
	// made but a gauge: the handlers still running now after their job
	// timed out, their slots given to new goroutines.
	TimedOut, Hung uint64
}

type workerCounters struct {
	rounds, claims, ackBatches                                    atomic.Uint64
	claimed, completed, retried, dead, stale, abandoned, released atomic.Uint64
	panics, leaseLost, errors, promoted, reaped                   atomic.Uint64
	trimmed, timedOut                                             atomic.Uint64
	hung                                                          atomic.Int64
}

// Worker claims jobs from a queue and runs a handler on each, with
// Concurrency handlers at once: it completes a job whose handler returns
// nil, retries one that fails (with backoff; dead after MaxAttempts),
// extends the lease of a long-running handler, and runs a promoter, a
// reaper and a trimmer of the dead set in the background. Every goroutine
// it starts is stopped by Shutdown.
//
// A worker also stops on its own when its queue's connection is finished
// for good: when the queue's [conn.Sender] has a Done() <-chan struct{}
// method (a *conn.Conn does: it never recovers once it failed or was
// closed) and that channel closes. It then gives up at once as a Shutdown
// past its deadline does, [Worker.Err] returns the terminal error
// (matching [ErrSenderDone] and wrapping the sender's Err(), such as
// conn.ErrBroken or conn.ErrClosed), and [Worker.Run] returns it.
type Worker struct {
	q   *Queue
	h   Handler
	cfg WorkerConfig

	stats workerCounters
	slots []*slot
	epoch time.Time // when the worker was made: the base of clock

	mu      sync.Mutex
	started bool
	stopped bool
	fatal   error // why the worker stopped on its own; guarded by mu

	// Made by Start.
	life     context.Context // the worker's exchanges; ends after Shutdown
	roundCtx context.Context // life, marked to decode a round's reply as it is read (see exchange)
	endLife  context.CancelFunc
	stop     chan struct{} // closed by Shutdown: stop claiming
	bgStop   chan struct{} // closed by Shutdown: stop extender and maintainer
	quit     chan struct{} // closed when the worker gives up
	// The claimed jobs for the handler goroutines (closed by the round
	// loop) and their outcomes for the round loop. Made by NewWorker.
	out        *outbox.Relay[done, claimed]
	abandon    atomic.Bool // set when the worker gives up: nothing more is sent
	giveUpOnce sync.Once
	giveUpErr  error         // why the worker gave up; written before abandon is set
	failed     chan struct{} // closed once a worker that stopped on its own has shut down

	roundDone, bgDone chan struct{}
	procWG            sync.WaitGroup
	done              chan struct{} // closed when every goroutine has returned
}

// NewWorker returns a worker running h, wrapped in cfg.Middleware, on jobs
// of q. Start it with Start or Run.
func NewWorker(q *Queue, h Handler, cfg WorkerConfig) (*Worker, error) {
	if q == nil || h == nil {
		return nil, errors.New("emq: NewWorker needs a queue and a handler")
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	w := &Worker{q: q, h: Chain(h, cfg.Middleware...), cfg: cfg, done: make(chan struct{}), epoch: time.Now()}
	w.out = outbox.NewRelay[done, claimed]()
	w.slots = make([]*slot, cfg.Concurrency)
	for i := range w.slots {
		w.slots[i] = w.newSlot()
	}
	return w, nil
}

// clock is the time now, as time.Now but read from the monotonic clock
// alone (its wall reading is epoch's, advanced by as much): one clock
// read where time.Now makes two, and the worker reads it per job (a
// handler's start; ~80 ns a time.Now on a VM's kvm-clock, half of it
// saved). Every time the worker compares or times (leases, timeouts,
// rounds) is such a reading, or time.Now's: both carry the monotonic
// reading that comparisons use.
func (w *Worker) clock() time.Time { return w.epoch.Add(time.Since(w.epoch)) }

// Stats returns the worker's counters.
func (w *Worker) Stats() WorkerStats {
	s := &w.stats
	return WorkerStats{
		Rounds: s.rounds.Load(), Claims: s.claims.Load(), AckBatches: s.ackBatches.Load(),
		Claimed: s.claimed.Load(), Completed: s.completed.Load(), Retried: s.retried.Load(),
		Dead: s.dead.Load(), Stale: s.stale.Load(), Abandoned: s.abandoned.Load(), Released: s.released.Load(),
		Panics: s.panics.Load(), LeaseLost: s.leaseLost.Load(), Errors: s.errors.Load(),
		Promoted: s.promoted.Load(), Reaped: s.reaped.Load(), Trimmed: s.trimmed.Load(),
		TimedOut: s.timedOut.Load(), Hung: uint64(max(s.hung.Load(), 0)),
	}
}

// ErrWorkerStarted is returned by Start and Run on a worker already
// started (a Worker runs once).
var ErrWorkerStarted = errors.New("emq: worker already started")

// Start starts the worker's goroutines and returns at once.
func (w *Worker) Start() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		return ErrWorkerStarted
	}
	w.started = true
	n := w.cfg.Concurrency
	w.life, w.endLife = context.WithCancel(context.Background())
	w.roundCtx = w.life
	if decodesInReply(w.q.ext) {
		w.roundCtx = wire.InReply(w.life)
	}
	w.stop, w.bgStop, w.quit = make(chan struct{}), make(chan struct{}), make(chan struct{})
	w.roundDone, w.bgDone = make(chan struct{}), make(chan struct{})
	w.failed = make(chan struct{})
	w.procWG.Add(n)
	for _, s := range w.slots {
		go w.process(s)
	}
	go w.roundLoop()
	go w.background()
	if d, ok := w.q.sender.(interface{ Done() <-chan struct{} }); ok {
		go w.watchSender(d.Done())
	}
	return nil
}

// Shutdown stops claiming, releases the jobs claimed ahead that no
// handler has started (back to pending, claimable at once), waits for the
// running handlers until ctx ends, completes or retries what they return,
// then stops the extender, the promoter and the reaper. It returns nil
// when every handler finished and every outcome was sent within ctx; a
// handler still running past its job's timeout (its job already retried:
// see [WorkerConfig].Timeout) is waited for, too, until ctx ends.
//
// When ctx ends first, Shutdown gives up: exchanges with the server still
// in flight are cancelled (a stalled server does not hold it), the
// handlers still running get their context cancelled (cause
// [ErrShutdown]), their jobs are left leased for the reaper, and
// completions not yet sent are reported as [EventError] events with Op
// "complete" (or "retry", "release") and Err [ErrShutdown] (their jobs,
// too, go back to the reaper). Shutdown then returns ctx.Err() once the worker's own
// goroutines have stopped; the handler goroutines return when their
// handlers do ([Worker.Done]).
func (w *Worker) Shutdown(ctx context.Context) error {
	w.mu.Lock()
	if !w.started || w.stopped {
		w.mu.Unlock()
		if !w.started {
			return errors.New("emq: worker not started")
		}
		select {
		case <-w.done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	w.stopped = true
	w.mu.Unlock()
	return w.shutdown(ctx, ErrShutdown)
}

// shutdown is Shutdown once the worker is marked stopped: cause is what
// the handlers' contexts and the unsent completions report if ctx ends
// first.
func (w *Worker) shutdown(ctx context.Context, cause error) error {
	close(w.stop)
	// From here on, ctx's end makes every wait below short: giveUp cancels
	// the exchanges in flight, so a stalled server holds nothing.
	stopGiveUp := context.AfterFunc(ctx, func() { w.giveUp(cause) })
	defer stopGiveUp()
	// The round loop settles every job in hand (the round in flight
	// finishes; the jobs it claims are released), or gives up.
	<-w.roundDone
	close(w.bgStop)
	<-w.bgDone
	w.endLife()
	go func() {
		w.procWG.Wait()
		w.stopTimers()
		w.drainOutbox() // outcomes a handler left after the loop gave up
		close(w.done)
	}()
	// A handler that ran past its timeout and ignores its context is
	// waited for until ctx ends, no longer.
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stopTimers stops the slots' timeout timers, once every handler has
// returned: none fires after Done.
func (w *Worker) stopTimers() {
	for _, s := range w.slots {
		s.mu.Lock()
		s.timer.Stop()
		s.mu.Unlock()
	}
}

// giveUp abandons what is left, once: no more outcomes are sent, the
// exchanges in flight are cancelled and the running handlers' contexts
// end with cause (a handler that starts later finds its context ended).
func (w *Worker) giveUp(cause error) {
	w.giveUpOnce.Do(func() {
		w.giveUpErr = cause
		w.abandon.Store(true)
		for _, s := range w.slots {
			s.mu.Lock()
			if s.busy && s.cancel != nil {
				s.cancel.cancel(cause)
			}
			s.mu.Unlock()
		}
		close(w.quit)
		w.endLife()
	})
}

// ErrSenderDone is matched by the terminal error of a worker that stopped
// on its own because its queue's connection is finished for good (see
// [Worker]). The error also wraps the connection's own, when it has an
// Err() error method: conn.ErrBroken, conn.ErrClosed.
var ErrSenderDone = errors.New("emq: the queue's connection is finished")

// watchSender stops the worker, as a Shutdown past its deadline, once
// done (the queue's sender's Done channel) closes; it returns when
// Shutdown begins first.
func (w *Worker) watchSender(done <-chan struct{}) {
	select {
	case <-w.stop:
		return
	case <-done:
	}
	err := ErrSenderDone
	if e, ok := w.q.sender.(interface{ Err() error }); ok {
		if serr := e.Err(); serr != nil {
			err = fmt.Errorf("%w: %w", ErrSenderDone, serr)
		}
	}
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return // a Shutdown is under way
	}
	w.stopped, w.fatal = true, err
	w.mu.Unlock()
	// Nothing can reach the server any more: give up at once.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w.shutdown(ctx, err)
	close(w.failed)
}

// Err returns the terminal error of a worker that stopped on its own, its
// queue's connection being finished: it matches [ErrSenderDone] and wraps
// the connection's error (conn.ErrBroken, conn.ErrClosed). It is nil
// while the worker runs and after a Shutdown.
func (w *Worker) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fatal
}

// Done returns a channel closed when every goroutine of the worker,
// handlers included, has returned after Shutdown, or after the worker
// stopped on its own ([Worker.Err]).
func (w *Worker) Done() <-chan struct{} { return w.done }

// Run starts the worker and runs until ctx ends, then shuts down within
// ShutdownTimeout and returns Shutdown's error: nil when every running
// handler finished in time. When the worker stops on its own first (its
// queue's connection is finished: see [Worker]), Run returns at once, once
// the worker's own goroutines have stopped, with the terminal error
// [Worker.Err].
func (w *Worker) Run(ctx context.Context) error {
	if err := w.Start(); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case <-w.failed:
		return w.Err()
	}
	sctx, cancel := context.WithTimeout(context.Background(), w.cfg.ShutdownTimeout)
	defer cancel()
	err := w.Shutdown(sctx)
	if ferr := w.Err(); ferr != nil {
		// It stopped on its own meanwhile: Shutdown only waited for it.
		<-w.failed
		return ferr
	}
	return err
}

// emit counts an event and tells OnEvent.
func (w *Worker) emit(e Event) {
	s := &w.stats
	switch e.Kind {
	case EventCompleted:
		s.completed.Add(1)
	case EventRetried:
		s.retried.Add(1)
	case EventDead:
		s.dead.Add(1)
	case EventStale:
		s.stale.Add(1)
	case EventAbandoned:
		s.abandoned.Add(1)
	case EventLeaseLost:
		s.leaseLost.Add(1)
	case EventError:
		s.errors.Add(1)
	case EventTimedOut:
		s.timedOut.Add(1)
	}
	if w.cfg.OnEvent != nil {
		w.tell(e)
	}
}

// tell calls OnEvent, recovering its panic: counted in Panics, and not
// told to OnEvent again.
func (w *Worker) tell(e Event) {
	defer func() {
		if r := recover(); r != nil {
			w.stats.panics.Add(1)
		}
	}()
	w.cfg.OnEvent(e)
}
