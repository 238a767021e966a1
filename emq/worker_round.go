package emq

import (
	"time"
)

// The round loop is the worker's one conversation with the server: each
// round is one settle_claim that settles the outcomes its handlers left
// since the last round and claims jobs for the handlers that will be free.
// One round is in flight at a time, so the outcomes that arrive during a
// round share the next: the busier the worker, the bigger its rounds.
//
// The worker holds jobs in hand: running, or claimed and waiting in the
// relay (w.out). It aims to hold Concurrency plus a prefetch that covers
// what its handlers finish in about two rounds (the rate at which outcomes
// come back times the round trip, doubled, at most Prefetch): handlers
// that finish pick their next job at once instead of waiting for a round
// trip, and a few handlers still fill big rounds. Slow handlers get no
// prefetch: no job waits in the worker while another worker could run it.

// done is one job's outcome, from a handler goroutine to the round loop.
type done struct {
	job  Job         // as claimed: its id and token settle it
	kind OutcomeKind // 0: nothing to send (abandoned, lease lost); it frees its slot
	err  error       // the handler's error, for a retry
	// For a retry: the delay and the attempts after which it is dead.
	delay time.Duration
	max   int
}

// round is the round loop's state and scratch, owned by that goroutine.
type round struct {
	inHand   int           // jobs claimed whose outcome the loop has not sent (or reported)
	pending  []done        // outcomes taken from the outbox, not yet sent
	outcomes []Outcome     // the current round's, for AppendSettleClaim
	settled  []Settled     // their results
	hand     []claimed     // the round's jobs for the relay
	prefetch int           // jobs to hold beyond Concurrency
	rtt      time.Duration // round-trip time, moving average
	rate     float64       // outcomes per second, moving average
	last     time.Time     // start of the previous round
	empty    bool          // the last claim found the queue empty (or failed)
	poll     time.Duration // the wait before claiming again from an empty queue
	pollAt   time.Time     // when the running poll timer fires
	// hold: the outcomes wait for the claim the poll timer makes soon
	// (within maxHold) instead of a round of their own; see roundLoop.
	hold bool
}

// maxHold is the longest outcomes whose handlers are all done wait for
// the next claim, so that both go in one round: the linger's bound.
const maxHold = 2 * time.Millisecond

// roundLoop runs rounds until Shutdown has been called and every job in
// hand is settled, or the worker gives up.
func (w *Worker) roundLoop() {
	defer close(w.roundDone)
	r := &round{poll: w.cfg.PollMin}
	poll := newIdleTimer()   // runs while claiming waits on an empty queue
	linger := newIdleTimer() // runs while outcomes wait for company
	stopping := false
	for {
		if w.abandon.Load() {
			if !stopping {
				w.releaseBuffered(r)
			}
			w.unsentAll(r)
			return
		}
		if !stopping && isClosed(w.stop) {
			stopping = true
			w.releaseBuffered(r) // the handlers return once their jobs are done
		}
		w.collect(r)
		n := 0
		if !stopping && !poll.on {
			// The jobs this round settles leave the hand.
			settling := min(len(r.pending), w.cfg.AckBatch)
			n = min(w.cfg.Concurrency+r.prefetch-(r.inHand-settling), w.cfg.ClaimBatch)
		}
		// A queue that had fewer jobs than a round asked for is claimed
		// from again after the poll; outcomes left meanwhile by handlers
		// that are all done would go in a round of their own, and the
		// claim in another, 1-5 ms apart (a third of the rounds of the
		// native e2e run were such pairs). When the claim is due within
		// maxHold they wait for it: one round instead of two, the
		// completions later by less than maxHold.
		r.hold = !stopping && poll.on && len(r.pending) > 0 && r.pollAt.Sub(w.clock()) <= maxHold
		if w.ready(r, n, stopping || linger.fired) {
			linger.stop()
			w.exchange(r, max(n, 0))
			if r.empty && n > 0 {
				poll.start(r.poll)
				r.pollAt = w.clock().Add(r.poll)
			}
			continue
		}
		if stopping && r.inHand == 0 {
			return
		}
		if len(r.pending) > 0 && !linger.on && !r.hold {
			linger.start(r.linger())
		}
		stop := w.stop
		if stopping {
			stop = nil
		}
		w.out.WakeAt(w.quiet(r))
		select {
		case <-stop:
		case <-w.out.Wake():
		case <-poll.c():
			poll.on = false
		case <-linger.c():
			linger.on, linger.fired = false, true
		case <-w.quit:
		}
	}
}

// ready reports whether a round should go now, with n jobs to claim and
// the pending outcomes: at once when there is nothing else to wait for
// (no handler running and no job queued, the worker stopping, the linger
// over), when the
// handlers are about to run out of jobs (half the prefetch used: the next
// round arrives about when the rest is), or when a round is full; else
// the outcomes wait for the ones still running, so that a few handlers
// still share round trips. Outcomes held (r.hold) do not go for their
// handlers being all done: they wait for the poll's claim.
func (w *Worker) ready(r *round, n int, now bool) bool {
	if len(r.pending) == 0 && n <= 0 {
		return false
	}
	buffered := w.out.Queued()
	running := r.inHand - buffered - len(r.pending)
	switch {
	case now, len(r.pending) >= w.cfg.AckBatch:
		return true
	case running <= 0 && buffered == 0:
		// Nothing runs and nothing is queued. (Jobs queued with none
		// running are a round's just handed over, their handlers
		// waking: their outcomes come soon, and the linger bounds the
		// wait. A channel handed each job straight to a parked
		// handler, so it never counted them queued.)
		return !r.hold // held: the poll's claim is due soon, and takes them
	case n > 0 && buffered <= r.prefetch/2:
		return true
	}
	return false
}

// quiet is how many outcomes the handlers can leave, at the least, before
// ready could change its mind about the state it just refused: the round
// loop sleeps through them instead of waking for each (a goroutine wakeup
// per job was a large part of the worker's CPU in the native e2e profile).
// Each bound counts outcomes still to come:
//   - a full round: AckBatch less those pending;
//   - no job running: at least every job running now ends;
//   - the handlers about to run out: each handler takes a job from the
//     relay only with an outcome (one step), bar its first take since the
//     last collect, so the relay drops to half the prefetch only after
//     buffered - prefetch/2 - Concurrency more outcomes.
//
// The timers (linger, poll) and stopping wake the loop on their own.
func (w *Worker) quiet(r *round) int {
	buffered := w.out.Queued()
	running := r.inHand - buffered - len(r.pending)
	k := min(w.cfg.AckBatch-len(r.pending), running, buffered-r.prefetch/2-w.cfg.Concurrency)
	return max(k, 1)
}

// linger is the longest outcomes wait for the handlers still running
// before a round goes without them: about a round trip, 100 µs to 2 ms.
func (r *round) linger() time.Duration {
	return min(max(r.rtt, 100*time.Microsecond), 2*time.Millisecond)
}

// idleTimer is a timer that knows whether it runs and whether it fired.
type idleTimer struct {
	t     *time.Timer
	on    bool // started and not yet received from
	fired bool // received from since the last stop
}

func newIdleTimer() *idleTimer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &idleTimer{t: t}
}

func (t *idleTimer) start(d time.Duration) { t.t.Reset(d); t.on, t.fired = true, false }

func (t *idleTimer) stop() {
	t.t.Stop()
	t.on, t.fired = false, false
}

// c is the timer's channel while it runs, else nil (never ready).
func (t *idleTimer) c() <-chan time.Time {
	if !t.on {
		return nil
	}
	return t.t.C
}

// collect takes the outcomes from the outbox into r.pending; one with
// nothing to send only frees its slot.
func (w *Worker) collect(r *round) {
	from := len(r.pending)
	r.pending = w.out.Take(r.pending)
	keep := r.pending[:from]
	for _, d := range r.pending[from:] {
		if d.kind == 0 {
			r.inHand--
			continue
		}
		keep = append(keep, d)
	}
	clear(r.pending[len(keep):])
	r.pending = keep
}

// exchange runs one round: up to AckBatch of the pending outcomes settled
// and n jobs claimed, in one settle_claim; then it reports each outcome,
// hands the jobs to the handlers and adapts the prefetch.
func (w *Worker) exchange(r *round, n int) {
	batch := r.pending[:min(len(r.pending), w.cfg.AckBatch)]
	r.outcomes = r.outcomes[:0]
	for i := range batch {
		d := &batch[i]
		c := Outcome{Kind: d.kind, ID: d.job.ID, Token: d.job.Token}
		if d.kind == OutcomeRetry {
			c.Delay, c.MaxAttempts, c.Error = d.delay, d.max, errorText(d.err)
		}
		r.outcomes = append(r.outcomes, c)
	}
	if n > 0 {
		w.stats.claims.Add(1)
	}
	if len(batch) > 0 {
		w.stats.ackBatches.Add(1)
	}
	w.stats.rounds.Add(1)
	var jobs []Job // made by the reply's decoding, of the size claimed: the handlers keep pointers into it
	start := w.clock()
	// The round's ctx is life, marked (for this module's executors) so
	// that the reply is decoded as it is read, straight into settled and
	// jobs.
	ctx := w.roundCtx
	if ctx == nil {
		ctx = w.life // a round run without Start (the tests')
	}
	settled, jobs, err := w.q.AppendSettleClaim(ctx, r.settled[:0], jobs, r.outcomes, w.cfg.Retention, w.cfg.Lease, n)
	for try := 0; len(batch) > 0 && try < ackResends && w.resendable(err, try); try++ {
		settled, jobs, err = w.q.AppendSettleClaim(ctx, r.settled[:0], jobs[:0], r.outcomes, w.cfg.Retention, w.cfg.Lease, n)
	}
	at := w.clock()
	r.settled = settled
	w.report(batch, settled, err)
	r.inHand -= len(batch)
	clear(batch)
	r.pending = append(r.pending[:0], r.pending[len(batch):]...)
	clear(r.outcomes)
	if err != nil {
		if n > 0 {
			w.emit(Event{Kind: EventError, Op: "claim", Err: err})
			r.empty, r.poll = true, twice(r.poll, w.cfg.PollMax)
		}
		return
	}
	w.stats.claimed.Add(uint64(len(jobs)))
	for i := range jobs {
		if err := checkID(jobs[i].ID); err != nil {
			// A row no transition of this package takes (another
			// runtime's?): it is not run, for its outcome would refuse
			// the whole round that carried it. Its lease runs out and
			// the reaper takes it back, to dead after MaxAttempts.
			w.emit(Event{Kind: EventError, Job: jobs[i], Op: "claim", Err: err})
			continue
		}
		r.inHand++
		r.hand = append(r.hand, claimed{job: &jobs[i], at: at})
	}
	w.out.Hand(r.hand...) // one lock for the round's jobs
	clear(r.hand)
	r.hand = r.hand[:0]
	if n > 0 {
		switch {
		case len(jobs) == n:
			r.empty, r.poll = false, w.cfg.PollMin
		case len(jobs) > 0:
			r.empty, r.poll = true, w.cfg.PollMin
		case r.empty:
			r.poll = twice(r.poll, w.cfg.PollMax)
		default:
			r.empty = true
		}
	}
	r.adapt(w, start, at, len(batch))
}

// adapt updates the moving averages of the round trip and of the outcome
// rate after a round that started at start, returned at end and settled
// k outcomes, and sizes the prefetch from them.
func (r *round) adapt(w *Worker, start, end time.Time, k int) {
	if w.cfg.Prefetch <= 0 {
		return
	}
	rtt := end.Sub(start)
	if r.rtt == 0 {
		r.rtt = rtt
	} else {
		r.rtt += (rtt - r.rtt) / 4
	}
	if !r.last.IsZero() {
		if dt := start.Sub(r.last).Seconds(); dt > 0 {
			r.rate += (float64(k)/dt - r.rate) / 4
		}
	}
	r.last = start
	r.prefetch = min(int(2*r.rate*r.rtt.Seconds()+0.5), w.cfg.Prefetch)
}

// report emits each outcome's event: the settled results of a round that
// went through, or its error.
func (w *Worker) report(batch []done, settled []Settled, err error) {
	for i := range batch {
		d := &batch[i]
		if err != nil {
			w.emit(Event{Kind: EventError, Job: d.job, Op: d.kind.String(), Err: err})
			continue
		}
		switch settled[i] {
		case SettledCompleted:
			w.emit(Event{Kind: EventCompleted, Job: d.job})
		case SettledRequeued, SettledDelayed:
			w.emit(Event{Kind: EventRetried, Job: d.job, Err: d.err})
		case SettledDead:
			w.emit(Event{Kind: EventDead, Job: d.job, Err: d.err})
		case SettledReleased:
			w.stats.released.Add(1)
		default:
			w.emit(Event{Kind: EventStale, Job: d.job, Err: d.err})
		}
	}
}

// releaseBuffered takes back the jobs claimed ahead that no handler has
// started, to be released (given back to pending, claimable at once), and
// closes the relay: the handlers return once their jobs are done.
func (w *Worker) releaseBuffered(r *round) {
	r.hand = w.out.Close(r.hand[:0])
	for _, c := range r.hand {
		r.pending = append(r.pending, done{job: *c.job, kind: OutcomeRelease})
	}
	clear(r.hand)
	r.hand = r.hand[:0]
}

// unsentAll reports, unsent, every outcome the loop holds or the outbox
// has, once the worker has given up: their jobs stay leased, for the
// reaper.
func (w *Worker) unsentAll(r *round) {
	w.collect(r)
	for _, d := range r.pending {
		w.unsent(d.job, d.kind.String())
	}
	clear(r.pending)
	r.pending = r.pending[:0]
}

// drainOutbox reports, unsent, what handlers left in the outbox after the
// round loop gave up and returned.
func (w *Worker) drainOutbox() {
	for _, d := range w.out.Take(nil) {
		if d.kind != 0 {
			w.unsent(d.job, d.kind.String())
		}
	}
}

// errorText is the failure text a retry keeps in the row, at most
// maxErrorText bytes.
func errorText(err error) string {
	if err == nil {
		return ""
	}
	text := err.Error()
	if len(text) > maxErrorText {
		text = text[:maxErrorText]
	}
	return text
}

// isClosed reports whether ch is closed (it is never sent on).
func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
