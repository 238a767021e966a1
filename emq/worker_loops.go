package emq

import (
	"context"
	"errors"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/echomq/echomq-go/conn"
)

// slot is one handler goroutine's record of the job it runs, shared with
// the extender.
type slot struct {
	mu     sync.Mutex
	busy   bool
	gen    uint64 // bumped per job, so a late extend result is not misapplied
	job    Job
	since  time.Time               // the claim, or the start of the last extend that held
	cancel context.CancelCauseFunc // ends the job's context
	lost   bool                    // extend answered stale: the job is not ours any more
}

// claimed is a job on its way from the claimer to a handler goroutine.
type claimed struct {
	job Job
	at  time.Time // when the claim returned
}

// maxErrorText bounds the failure text a retry stores in the row.
const maxErrorText = 4 << 10

// claimLoop claims up to the free slots' worth of jobs, hands them to the
// handler goroutines, and waits, doubling from PollMin to PollMax, while
// claims find nothing. It stops when Shutdown closes stop.
func (w *Worker) claimLoop(jobs chan<- claimed) {
	defer close(w.claimDone)
	poll := w.cfg.PollMin
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var buf []Job
	for {
		select {
		case <-w.stop:
			return
		case <-w.tokens:
		}
		k := 1
		runtime.Gosched() // slots freed now join this claim
	more:
		for k < w.cfg.ClaimBatch {
			select {
			case <-w.tokens:
				k++
			default:
				break more
			}
		}
		var err error
		buf, err = w.q.AppendClaimBatch(w.life, buf[:0], w.cfg.Lease, k)
		at := time.Now()
		w.stats.claims.Add(1)
		w.stats.claimed.Add(uint64(len(buf)))
		for _, j := range buf {
			jobs <- claimed{job: j, at: at}
		}
		for range k - len(buf) {
			w.tokens <- struct{}{}
		}
		if err != nil {
			w.emit(Event{Kind: EventError, Op: "claim", Err: err})
		}
		if len(buf) > 0 && err == nil {
			clear(buf)
			poll = w.cfg.PollMin
			continue
		}
		timer.Reset(poll)
		select {
		case <-w.stop:
			timer.Stop()
			return
		case <-timer.C:
		}
		poll = min(2*poll, w.cfg.PollMax)
	}
}

// process is one handler goroutine: it runs the jobs it is handed until
// Shutdown closes the channel.
func (w *Worker) process(s *slot, jobs <-chan claimed) {
	defer w.procWG.Done()
	for c := range jobs {
		w.runJob(s, c)
		w.tokens <- struct{}{}
	}
}

// runJob runs the handler on one job and acts on its outcome.
func (w *Worker) runJob(s *slot, c claimed) {
	// Each job has a context of its own, cancelled when its handler
	// returns (as net/http's request context is): a context the handler
	// leaked to a goroutine must not outlive the job, nor come back to
	// life for the next one.
	ctx, cancel := context.WithCancelCause(w.handlerCtx)
	s.mu.Lock()
	s.cancel = cancel
	s.busy, s.job, s.since, s.lost = true, c.job, c.at, false
	s.gen++
	s.mu.Unlock()

	job := new(Job)
	*job = c.job
	err := w.call(ctx, job)
	cancel(nil) // the handler returned: its context ends (context.Canceled)

	s.mu.Lock()
	lost := s.lost
	s.busy, s.job, s.cancel = false, Job{}, nil
	s.mu.Unlock()

	switch {
	case lost:
		// The lease is gone: the job is the reaper's (or another
		// claimant's) now; EventLeaseLost told so.
	case w.abandon.Load():
		// Past the shutdown deadline: nothing more is sent, and the job
		// is left to the reaper. An outcome that would have been sent is
		// reported unsent.
		switch {
		case err == nil:
			w.unsent(c.job, "complete")
		case errors.Is(err, ErrAbandon):
			w.emit(Event{Kind: EventAbandoned, Job: c.job})
		default:
			w.unsent(c.job, "retry")
		}
	case err == nil:
		w.complete(c.job)
	case errors.Is(err, ErrAbandon):
		w.emit(Event{Kind: EventAbandoned, Job: c.job})
	default:
		w.retry(c.job, err)
	}
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

// complete acknowledges a job whose handler succeeded: through the acker's
// batches, or at once when AckBatch is 1.
func (w *Worker) complete(job Job) {
	if w.cfg.AckBatch == 1 {
		w.flushAcks([]Job{job}, nil, nil)
		return
	}
	select {
	case w.acks <- job:
	case <-w.ackQuit:
		w.unsent(job, "complete")
	}
}

// unsent reports a job whose outcome (op: "complete" or "retry") was never
// sent because the worker gave up: an EventError whose Err is why
// ([ErrShutdown], or the terminal error of a worker whose connection is
// finished). The job stays leased, for the reaper.
func (w *Worker) unsent(job Job, op string) {
	w.emit(Event{Kind: EventError, Job: job, Op: op, Err: w.giveUpErr})
}

// drainAcks reports, unsent, every completion still queued for the acker.
// It is called once the acker has quit, so nothing else receives.
func (w *Worker) drainAcks() {
	for {
		select {
		case j, ok := <-w.acks:
			if !ok {
				return
			}
			w.unsent(j, "complete")
		default:
			return
		}
	}
}

// retry gives back a job whose handler failed.
func (w *Worker) retry(job Job, herr error) {
	maxAttempts := w.cfg.MaxAttempts
	if errors.Is(herr, ErrSkipRetry) {
		maxAttempts = 0
	}
	text := herr.Error()
	if len(text) > maxErrorText {
		text = text[:maxErrorText]
	}
	delay := w.cfg.backoff(job.Token, herr)
	out, err := w.q.Retry(w.life, job.ID, job.Token, delay, maxAttempts, text)
	switch {
	case errors.Is(err, ErrStale):
		w.emit(Event{Kind: EventStale, Job: job, Err: herr})
	case err != nil:
		w.emit(Event{Kind: EventError, Job: job, Op: "retry", Err: err})
	case out == RetryDead:
		w.emit(Event{Kind: EventDead, Job: job, Err: herr})
	default:
		w.emit(Event{Kind: EventRetried, Job: job, Err: herr})
	}
}

// ackLoop completes the jobs the handler goroutines hand it, as many as
// are waiting (up to AckBatch) in one complete_batch. It returns when acks
// is closed and drained, or, past the shutdown deadline, when ackQuit is
// closed, after reporting every completion still queued as unsent.
func (w *Worker) ackLoop() {
	defer close(w.ackDone)
	batch := make([]Job, 0, w.cfg.AckBatch)
	var acks []Ack
	var done []bool
	for {
		var open bool
		var j Job
		select {
		case j, open = <-w.acks:
			if !open {
				return
			}
		case <-w.ackQuit:
			// Past the shutdown deadline: what is still queued is never
			// sent, but each job is reported.
			w.drainAcks()
			return
		}
		batch = append(batch[:0], j)
		// Handlers finishing now join this batch: one round trip for all
		// of them.
		runtime.Gosched()
	drain:
		for len(batch) < w.cfg.AckBatch {
			select {
			case j, ok := <-w.acks:
				if !ok {
					open = false
					break drain
				}
				batch = append(batch, j)
			default:
				break drain
			}
		}
		acks, done = w.flushAcks(batch, acks, done)
		clear(batch)
		if !open {
			return
		}
	}
}

// flushAcks completes batch, one complete_batch for several jobs, and
// reports each outcome. acks and done are scratch, returned for reuse.
func (w *Worker) flushAcks(batch []Job, acks []Ack, done []bool) ([]Ack, []bool) {
	if len(batch) == 0 {
		return acks, done
	}
	if w.abandon.Load() {
		// Past the shutdown deadline: nothing more is sent.
		for _, j := range batch {
			w.unsent(j, "complete")
		}
		return acks, done
	}
	w.stats.ackBatches.Add(1)
	if len(batch) == 1 {
		j := batch[0]
		err := w.q.Complete(w.life, j.ID, j.Token, w.cfg.Retention)
		for try := 0; try < ackResends && w.resendable(err, try); try++ {
			err = w.q.Complete(w.life, j.ID, j.Token, w.cfg.Retention)
		}
		switch {
		case err == nil:
			w.emit(Event{Kind: EventCompleted, Job: j})
		case errors.Is(err, ErrStale):
			w.emit(Event{Kind: EventStale, Job: j})
		default:
			w.emit(Event{Kind: EventError, Job: j, Op: "complete", Err: err})
		}
		return acks, done
	}
	acks = acks[:0]
	for _, j := range batch {
		acks = append(acks, Ack{ID: j.ID, Token: j.Token})
	}
	var err error
	done, err = w.q.AppendCompleteBatch(w.life, done[:0], acks, w.cfg.Retention)
	for try := 0; try < ackResends && w.resendable(err, try); try++ {
		done, err = w.q.AppendCompleteBatch(w.life, done[:0], acks, w.cfg.Retention)
	}
	for i, j := range batch {
		switch {
		case err != nil:
			w.emit(Event{Kind: EventError, Job: j, Op: "complete", Err: err})
		case done[i]:
			w.emit(Event{Kind: EventCompleted, Job: j})
		default:
			w.emit(Event{Kind: EventStale, Job: j})
		}
	}
	clear(acks)
	return acks, done
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
	start := time.Now()
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
		s.cancel(ErrLeaseLost)
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
