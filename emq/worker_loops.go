package emq

import (
	"context"
	"errors"
	"runtime/debug"
	"sync"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/lazytimer"
)

// slot is one handler goroutine's record of the job it runs, shared with
// the extender and the slot's timeout timer. When a job times out, the
// slot passes to a new handler goroutine; the one whose handler hangs
// finds, when it returns, that the slot's gen moved on, and goes.
type slot struct {
	mu     sync.Mutex
	busy   bool
	gen    uint64 // bumped per job and at a timeout, so a late result is not misapplied
	job    Job
	since  time.Time // the claim, or the start of the last extend that held
	cancel *jobCtx   // the job's context, to cancel
	lost   bool      // extend answered stale: the job is not ours any more
	ctxs   []jobCtx  // the contexts of the slot's next jobs (nextCtx)
	slab   int       // the size of the last slab of ctxs

	started time.Time     // when the handler started
	timeout time.Duration // the job's timeout, from started
	// The timer runs w.timeout(s). It is lazy (package lazytimer): armed
	// at a job's start only when it is not armed already for an earlier
	// time; when it fires early (for a job since finished) it arms itself
	// for the running job's time left.
	timer lazytimer.Timer
}

// newSlot returns a slot whose timer, stopped, runs its timeouts.
func (w *Worker) newSlot() *slot {
	s := new(slot)
	s.timer = lazytimer.New(func() { w.timeout(s) })
	return s
}

// claimed is a job on its way from the round loop to a handler goroutine.
type claimed struct {
	job *Job      // the handler's to keep
	at  time.Time // when the claim returned
}

// A handler goroutine allocates its job contexts in slabs: the first of
// ctxSlabMin, each next one twice the last, up to ctxSlabMax (a slot that
// runs few jobs holds little; a busy one allocates once per ctxSlabMax
// jobs).
const (
	ctxSlabMin = 8
	ctxSlabMax = 256
)

// nextCtx returns a fresh context for the slot's next job, from a slab
// that the slot's handler goroutine allocates (see ctxSlabMin): made and
// first written by the goroutine that uses them (a slab per round, made
// by the round loop, had each handler's first touch of its context miss
// the cache: ~5% of the client's CPU in the native e2e profile).
// Contexts are never reused: a slab stays alive while a context of it
// leaked to a goroutine does. It is called with s.mu held, by the
// goroutine that holds the slot.
func (s *slot) nextCtx() *jobCtx {
	if len(s.ctxs) == 0 {
		s.slab = min(max(2*s.slab, ctxSlabMin), ctxSlabMax)
		s.ctxs = make([]jobCtx, s.slab)
	}
	c := &s.ctxs[0]
	s.ctxs = s.ctxs[1:]
	return c
}

// maxErrorText bounds the failure text a retry stores in the row.
const maxErrorText = 4 << 10

// process is one handler goroutine: it runs the jobs it is handed until
// the round loop closes the relay. It leaves each job's outcome and takes
// its next job in one step (Relay.Next): a handler that keeps up takes
// job after job without a channel operation or a wakeup.
func (w *Worker) process(s *slot) {
	defer w.procWG.Done()
	wake := make(chan struct{}, 1)
	var d done
	put := false
	for {
		c, ok := w.out.Next(wake, d, put)
		if !ok {
			return
		}
		if d, ok = w.runJob(s, c); !ok {
			return // the job timed out: the slot is another goroutine's
		}
		put = true
	}
}

// runJob runs the handler on one job and returns its outcome, for the
// round loop. It returns false when the job timed out while its handler
// ran: its outcome was left then, the slot belongs to another goroutine,
// and this one must go.
func (w *Worker) runJob(s *slot, c claimed) (done, bool) {
	job := *c.job // as claimed: the handler may change its own copy
	// One clock reading serves the lease check and the job's start,
	// unless an extend went to the server between the two.
	now := w.clock()
	if !w.holdLease(s, job, c.at, &now) {
		return done{job: job}, true // frees the slot; the event is out
	}
	timeout := w.cfg.Timeout
	if w.cfg.TimeoutFor != nil {
		if d, p := w.timeoutFor(c.job); p != nil {
			w.stats.panics.Add(1)
			w.emit(Event{Kind: EventError, Job: job, Op: "timeout", Err: p})
		} else if d > 0 {
			timeout = d
		}
	}
	// Each job has a context of its own, cancelled when its handler
	// returns (as net/http's request context is): a context the handler
	// leaked to a goroutine must not outlive the job, nor come back to
	// life for the next one. Its parent is no context: the worker cancels
	// it itself (lease lost, giving up), and no parent's lock is shared
	// by every handler. (A jobCtx: see there.)
	s.mu.Lock()
	ctx := s.nextCtx()
	s.cancel = ctx
	s.busy, s.job, s.lost = true, job, false
	if s.since.Before(c.at) {
		s.since = c.at
	}
	s.gen++
	gen := s.gen
	s.started, s.timeout = now, timeout
	s.timer.Arm(now, timeout)
	s.mu.Unlock()
	if w.abandon.Load() {
		ctx.cancel(w.giveUpErr) // the worker gave up before this job started
	}

	err := w.call(ctx, c.job)
	ctx.cancel(nil) // the handler returned: its context ends (context.Canceled)

	s.mu.Lock()
	if s.gen != gen {
		// It timed out: its outcome (a retry) was left then, and the
		// slot given to another goroutine. This result is dropped.
		s.mu.Unlock()
		w.stats.hung.Add(-1)
		return done{}, false
	}
	lost := s.lost
	s.busy, s.job, s.cancel, s.since = false, Job{}, nil, time.Time{}
	s.mu.Unlock()
	return w.outcome(job, err, lost), true
}

// timeout runs when s's timer fires: if the job s runs has been running
// for its timeout, its handler's context ends, the job is retried (its
// outcome left for the round loop now, the lease extended no more) and
// the slot passes to a new handler goroutine, so that a handler that
// ignores its context holds no slot. A timer that fired for a job since
// finished arms itself for the running job's time left, or, the slot
// idle, leaves the next job to arm it.
func (w *Worker) timeout(s *slot) {
	s.mu.Lock()
	s.timer.Fired()
	if !s.busy {
		s.mu.Unlock()
		return
	}
	if left := s.timeout - time.Since(s.started); left > 0 {
		s.timer.Arm(w.clock(), left)
		s.mu.Unlock()
		return
	}
	job, cancel, lost, d := s.job, s.cancel, s.lost, s.timeout
	s.gen++ // the extender's result and the handler's are stale now
	s.busy, s.job, s.cancel, s.since, s.lost = false, Job{}, nil, time.Time{}, false
	// The handler goroutine goes when its handler returns; until then it
	// is counted hung, and it holds the worker's Done. Adding to procWG
	// is safe: that goroutine has not called Done.
	w.stats.hung.Add(1)
	w.procWG.Add(1)
	s.mu.Unlock()
	go w.process(s)

	err := &timeoutError{after: d}
	cancel.cancel(err)
	w.emit(Event{Kind: EventTimedOut, Job: job, Err: err})
	w.out.Put(w.outcome(job, err, lost))
}

// timeoutError is the failure of a job whose handler ran past its
// timeout; it matches [ErrJobTimeout].
type timeoutError struct{ after time.Duration }

func (e *timeoutError) Error() string        { return "emq: job timed out after " + e.after.String() }
func (e *timeoutError) Is(target error) bool { return target == ErrJobTimeout }

// outcome is what becomes of job, whose handler returned err (or timed
// out), for the round loop: kind 0 when nothing is to be sent.
func (w *Worker) outcome(job Job, err error, lost bool) done {
	d := done{job: job}
	switch {
	case lost:
		// The lease is gone: the job is the reaper's (or another
		// claimant's) now; EventLeaseLost told so.
	case errors.Is(err, ErrAbandon):
		w.emit(Event{Kind: EventAbandoned, Job: job})
	case w.abandon.Load():
		// The worker gave up: nothing more is sent, and the job is left
		// to the reaper. An outcome that would have been sent is
		// reported unsent.
		if err == nil {
			w.unsent(job, "complete")
		} else {
			w.unsent(job, "retry")
		}
	case err == nil:
		d.kind = OutcomeComplete
	default:
		d.kind, d.err, d.max = OutcomeRetry, err, w.cfg.MaxAttempts
		if errors.Is(err, ErrSkipRetry) {
			d.max = 0
		}
		var p *PanicError
		if d.delay, p = w.cfg.backoff(job.Token, err); p != nil {
			w.stats.panics.Add(1)
			w.emit(Event{Kind: EventError, Job: job, Op: "backoff", Err: p})
		}
	}
	return d
}

// holdLease makes sure a job claimed ahead still holds its lease before
// its handler starts: one that waited ExtendInterval since its claim is
// extended first, and one whose lease was lost meanwhile is not run
// (EventLeaseLost). s.since records the extension. *now is the time of
// the check; after an extend it is read again.
func (w *Worker) holdLease(s *slot, job Job, at time.Time, now *time.Time) bool {
	if w.cfg.ExtendInterval < 0 {
		return true
	}
	start := *now
	if start.Sub(at) < w.cfg.ExtendInterval {
		return true
	}
	err := w.q.Extend(w.life, job.ID, job.Token, w.cfg.Lease)
	*now = w.clock()
	switch {
	case errors.Is(err, ErrStale):
		w.emit(Event{Kind: EventLeaseLost, Job: job})
		return false
	case err != nil:
		w.emit(Event{Kind: EventError, Job: job, Op: "extend", Err: err})
	default:
		s.mu.Lock()
		s.since = start
		s.mu.Unlock()
	}
	return true
}

// timeoutFor calls TimeoutFor, recovering its panic.
func (w *Worker) timeoutFor(job *Job) (d time.Duration, p *PanicError) {
	defer func() {
		if r := recover(); r != nil {
			p = &PanicError{Value: r, Stack: debug.Stack(), Func: "TimeoutFor"}
		}
	}()
	return w.cfg.TimeoutFor(job), nil
}

// call runs the handler, turning a panic into a *PanicError.
func (w *Worker) call(ctx context.Context, job *Job) (err error) {
	defer func() {
		if r := recover(); r != nil {
			w.stats.panics.Add(1)
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return w.h.ProcessJob(ctx, job)
}

// unsent reports a job whose outcome (op: "complete", "retry" or
// "release") was never sent because the worker gave up: an EventError
// whose Err is why ([ErrShutdown], or the terminal error of a worker whose
// connection is finished). The job stays leased, for the reaper.
func (w *Worker) unsent(job Job, op string) {
	w.emit(Event{Kind: EventError, Job: job, Op: op, Err: w.giveUpErr})
}

// Completions that failed without being sent are sent again, at most
// ackResends times, after ackResendBackoff doubled per try.
const (
	ackResends       = 3
	ackResendBackoff = 20 * time.Millisecond
)

// resendable reports whether a completion that failed with err may be sent
// again, as try+1 of ackResends re-sends, and waits the backoff first. Only
// a command that was certainly never sent qualifies: its error matches
// conn.ErrNotConnected (a conn.Client had no connection to send it on).
// Any other failure is ambiguous (the completion may have run) and is
// never re-sent: the job's lease decides, through the reaper. It is false
// when the worker gives up meanwhile.
func (w *Worker) resendable(err error, try int) bool {
	if err == nil || !errors.Is(err, conn.ErrNotConnected) || w.abandon.Load() {
		return false
	}
	t := time.NewTimer(ackResendBackoff << try)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-w.life.Done():
		return false
	}
}

// background runs the extender, the maintainer and the trimmer until
// bgStop closes.
func (w *Worker) background() {
	defer close(w.bgDone)
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); w.extendLoop() }()
	go func() { defer wg.Done(); w.maintainLoop() }()
	go func() { defer wg.Done(); w.trimLoop() }()
	wg.Wait()
}

// extendLoop extends, every ExtendInterval/2, the lease of each job that
// has run for ExtendInterval since its claim or last extension, and
// cancels the handler of a job whose lease was lost.
func (w *Worker) extendLoop() {
	if w.cfg.ExtendInterval < 0 {
		<-w.bgStop
		return
	}
	tick := time.NewTicker(max(w.cfg.ExtendInterval/2, time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-w.bgStop:
			return
		case <-tick.C:
		}
		for _, s := range w.slots {
			w.extendSlot(s)
		}
	}
}

// extendSlot extends s's lease when it is due.
func (w *Worker) extendSlot(s *slot) {
	start := w.clock()
	s.mu.Lock()
	if !s.busy || s.lost || start.Sub(s.since) < w.cfg.ExtendInterval {
		s.mu.Unlock()
		return
	}
	job, gen := s.job, s.gen
	s.mu.Unlock()

	err := w.q.Extend(w.life, job.ID, job.Token, w.cfg.Lease)
	stale := errors.Is(err, ErrStale)
	s.mu.Lock()
	current := s.busy && s.gen == gen
	if current && err == nil {
		s.since = start
	}
	if current && stale {
		s.lost = true
		s.cancel.cancel(ErrLeaseLost)
	}
	s.mu.Unlock()
	switch {
	case current && stale:
		w.emit(Event{Kind: EventLeaseLost, Job: job})
	case err != nil && !stale:
		w.emit(Event{Kind: EventError, Job: job, Op: "extend", Err: err})
	}
}

// maintainLoop promotes due delayed jobs and reaps expired leases, each on
// its own jittered interval.
func (w *Worker) maintainLoop() {
	promote, reap := newJitterTimer(w.cfg.PromoteInterval), newJitterTimer(w.cfg.ReapInterval)
	defer promote.stop()
	defer reap.stop()
	for {
		select {
		case <-w.bgStop:
			return
		case <-promote.c():
			w.maintain("promote", func(limit int) (int, error) { return w.q.Promote(w.life, limit) })
			promote.reset()
		case <-reap.c():
			w.maintain("reap", func(limit int) (int, error) { return w.q.Reap(w.life, limit, w.cfg.MaxAttempts) })
			reap.reset()
		}
	}
}

// maintain calls f with MaintainLimit until it moves fewer, or 100 times.
func (w *Worker) maintain(op string, f func(limit int) (int, error)) {
	for range 100 {
		n, err := f(w.cfg.MaintainLimit)
		if op == "promote" {
			w.stats.promoted.Add(uint64(n))
		} else {
			w.stats.reaped.Add(uint64(n))
		}
		if err != nil {
			w.emit(Event{Kind: EventError, Op: op, Err: err})
			return
		}
		if n < w.cfg.MaintainLimit {
			return
		}
		select {
		case <-w.bgStop:
			return
		default:
		}
	}
}

// jitterTimer fires every interval ±20%; a negative interval never fires.
type jitterTimer struct {
	d time.Duration
	t *time.Timer
}

func newJitterTimer(d time.Duration) *jitterTimer {
	jt := &jitterTimer{d: d}
	if d >= 0 {
		jt.t = time.NewTimer(jitter(d))
	}
	return jt
}

func (jt *jitterTimer) c() <-chan time.Time {
	if jt.t == nil {
		return nil
	}
	return jt.t.C
}

func (jt *jitterTimer) reset() { jt.t.Reset(jitter(jt.d)) }

func (jt *jitterTimer) stop() {
	if jt.t != nil {
		jt.t.Stop()
	}
}
