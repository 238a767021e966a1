package jobs

import (
	"sync"
	"time"

	"github.com/echomq/echomq-go/emq"
)

// The round loop is the server's one conversation with the queues: each
// round claims the free budget from the queue the weights owe most (see
// plan), in one settle_claim that also settles that queue's outcomes;
// other queues' outcomes ride with their own next claim unless due
// (settleDue), when they go in the same round, their calls sharing the
// connection's pipeline, plus one finish per queue for the jobs whose end
// is waited for. One round is in flight at a time, so outcomes that
// arrive meanwhile share the next.

// item is a claimed job on its way to a handler goroutine.
type item struct {
	lane *lane
	job  *emq.Job
	at   time.Time // when the claim returned
}

// outcome is what became of one job, from a handler to the round loop.
type outcome struct {
	lane *lane
	job  emq.Job
	kind outKind
	// For a retry: the delay, the attempts after which it is dead and the
	// error text. For a finish: the retention and the data.
	delay     time.Duration
	max       int
	text      string
	retention time.Duration
	data      []byte
}

type outKind uint8

const (
	outDrop     outKind = iota // nothing to send: frees its place in hand
	outComplete                // settle_claim completion
	outRetry                   // settle_claim retry (not the last attempt)
	outRelease                 // settle_claim release (claimed, never run)
	outResult                  // finish 'c': completed with a result kept
	outDead                    // finish 'd': dead, announced
)

// take moves every outcome of the outbox into its lane's list and
// returns how many were dropped (nothing to send).
func (srv *Server) take(scratch []outcome, now time.Time) (rest []outcome, dropped int) {
	scratch = srv.out.Take(scratch[:0])
	for i := range scratch {
		o := &scratch[i]
		if o.kind == outDrop {
			dropped++
			continue
		}
		l := o.lane
		if len(l.outs) == 0 {
			l.outsSince = now
		}
		l.outs = append(l.outs, *o)
		if o.kind == outResult || o.kind == outDead {
			l.fins++
		}
		if l.limited.Load() {
			// Its job leaves active with this outcome: a claim found
			// short by the limit may succeed now (but not before the
			// rate's window admits one).
			l.pollUntil, l.poll = l.rateUntil, srv.cfg.PollMin
		}
	}
	clear(scratch)
	return scratch[:0], dropped
}

// settleDue reports whether l's outcomes go in the next round even when l
// is not claimed from in it. Outcomes ride with their queue's claim
// (one call per round when one queue is claimed), but wait at most
// settleAge; they go at once when their end is waited for (a finish),
// when the queue's limits count its active jobs, when the queue will not
// be claimed from within settleAge (found empty, or its rate), or when
// they are many.
func (srv *Server) settleDue(lp *loop, l *lane, now time.Time) bool {
	switch {
	case len(l.outs) == 0:
		return false
	case l.fins > 0, l.limited.Load(), len(l.outs) >= maxRoundOuts:
		return true
	}
	// Due at settleAge, or now when the queue's next claim comes later.
	due := l.outsSince.Add(lp.settleAge())
	return !now.Before(due) || l.pollUntil.After(due)
}

// maxRoundOuts bounds the outcomes one call settles.
const maxRoundOuts = 1000

// loop is the round loop's own state.
type loop struct {
	inHand  int // jobs claimed whose outcome is not yet sent
	waiting int // outcomes in the lanes' lists
	due     int // of those, the ones the next round sends anyway (settleDue)
	scratch []outcome
	rtt     time.Duration
	grants  []int     // this round's claims, by lane
	credit  []float64 // the credits they leave, by lane
	send    []bool    // this round's exchanges, by lane
	results []result  // their answers, by lane
	wg      sync.WaitGroup
}

// result is one exchange's answer.
type result struct {
	jobs []emq.Job
	at   time.Time
	sent int
}

// linger is the longest due outcomes wait for the handlers still running
// before a round goes without them: about a round trip, 100 µs to 2 ms.
func (lp *loop) linger() time.Duration {
	return min(max(lp.rtt, 100*time.Microsecond), 2*time.Millisecond)
}

// settleAge is the longest the outcomes of a queue not claimed from wait
// for its next claim: 8 round trips, 2 ms to 50 ms.
func (lp *loop) settleAge() time.Duration {
	return min(max(8*lp.rtt, 2*time.Millisecond), 50*time.Millisecond)
}

// roundLoop runs rounds until Shutdown was called and every job in hand
// settled, or the server gives up.
func (srv *Server) roundLoop(stopc <-chan struct{}) {
	n := len(srv.lanes)
	lp := &loop{grants: make([]int, n), credit: make([]float64, n), send: make([]bool, n), results: make([]result, n)}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	stopping := false
	lingered := false
	for {
		if srv.abandon.Load() {
			if !stopping {
				close(srv.jobs)
			}
			return // what is in hand stays active, for the reaper
		}
		if !stopping && isClosed(stopc) {
			stopping = true
			srv.releaseBuffered(lp)
			close(srv.jobs)
		}
		now := time.Now()
		var dropped int
		lp.scratch, dropped = srv.take(lp.scratch, now)
		lp.inHand -= dropped
		lp.waiting, lp.due = 0, 0
		for _, l := range srv.lanes {
			lp.waiting += len(l.outs)
			if srv.settleDue(lp, l, now) {
				lp.due += len(l.outs)
			}
		}
		claims := 0
		clear(lp.grants)
		for _, l := range srv.lanes {
			lp.credit[l.i] = l.credit
		}
		if !stopping {
			free := srv.cfg.Concurrency + srv.cfg.Prefetch - (lp.inHand - lp.waiting)
			claims = srv.plan(lp, free, now)
		}
		if all := stopping || lingered; srv.ready(lp, claims, all) {
			lingered = false
			srv.round(lp, now, all || claims == 0)
			continue
		}
		if stopping && lp.inHand == 0 {
			return
		}
		// Wait: for an outcome, for a queue's poll, for the linger of
		// the due outcomes, or for the others' settleAge.
		wait := time.Duration(-1)
		earlier := func(d time.Duration) {
			if d > 0 && (wait < 0 || d < wait) {
				wait = d
			}
		}
		if lp.due > 0 {
			earlier(lp.linger())
		}
		for _, l := range srv.lanes {
			if len(l.outs) > 0 {
				earlier(max(l.outsSince.Add(lp.settleAge()).Sub(now), time.Microsecond))
			}
			if !stopping {
				earlier(l.pollUntil.Sub(now))
			}
		}
		if wait >= 0 {
			timer.Reset(wait)
		}
		stop := stopc
		if stopping {
			stop = nil
		}
		select {
		case <-stop:
		case <-srv.out.Wake():
		case <-timer.C:
			lingered = lp.due > 0
		case <-srv.quit:
		}
		timer.Stop()
	}
}

// ready reports whether a round should go now: when there is something
// to send and either nothing to wait for (now, no handler running, a full
// round) or the handlers are about to run out of jobs. Outcomes that are
// not due (settleDue) wait for a round that claims.
func (srv *Server) ready(lp *loop, claims int, now bool) bool {
	if now {
		return lp.waiting > 0 || claims > 0
	}
	if lp.due == 0 && claims == 0 {
		return false
	}
	buffered := len(srv.jobs)
	running := lp.inHand - buffered - lp.waiting
	switch {
	case running <= 0, lp.due >= maxRoundOuts:
		return true
	case claims > 0 && buffered <= srv.cfg.Prefetch/2:
		return true
	}
	return false
}

// plan shares free claims among the queues not known empty, into
// lp.grants (and the credits they leave into lp.credit, committed when
// the round goes), and returns their sum.
//
// Each eligible queue is owed free × its share, added to its credit and
// carried from round to round. Weighted: the share is the queue's weight
// over the eligible weights, and the queue owed most takes the whole free
// budget (its credit may go below zero), so that a round is one call and
// the claims follow the weights exactly over a cycle of rounds (smooth
// weighted round robin): the error of a queue's count is below one
// round's claim at any time. Strict: each queue but the first eligible
// is owed StrictFloor, claimed once its credit reaches a quantum (an
// eighth of free, at least 16: a lower queue's claims are batched too),
// and the first takes the rest.
func (srv *Server) plan(lp *loop, free int, now time.Time) int {
	clear(lp.grants)
	if free <= 0 {
		return 0
	}
	total, first, eligible := 0, -1, 0
	for _, l := range srv.lanes {
		lp.credit[l.i] = l.credit
		if now.Before(l.pollUntil) {
			continue
		}
		if first < 0 {
			first = l.i
		}
		total += l.weight
		eligible++
	}
	if total == 0 {
		return 0
	}
	if srv.cfg.Strict {
		quantum := float64(min(free, max(free/8, 16)))
		sum := 0
		for _, l := range srv.lanes {
			if now.Before(l.pollUntil) || l.i == first {
				continue
			}
			c := l.credit + float64(free)*srv.cfg.StrictFloor
			g := 0
			if c >= quantum {
				g = min(int(c), free-sum)
			}
			lp.credit[l.i] = c - float64(g)
			lp.grants[l.i] = g
			sum += g
		}
		lp.credit[first] = 0
		lp.grants[first] = free - sum
		return free
	}
	best := -1
	for _, l := range srv.lanes {
		if now.Before(l.pollUntil) {
			continue
		}
		c := l.credit + float64(free)*float64(l.weight)/float64(total)
		lp.credit[l.i] = c
		if best < 0 || c > lp.credit[best] {
			best = l.i
		}
	}
	lp.grants[best] = free
	lp.credit[best] -= float64(free)
	return free
}

// round sends one round: to each queue claimed from, and to each whose
// outcomes are due (all with outcomes when all), a finish (when needed)
// and a settle_claim, all at once (on a goroutine each but the last: their
// calls share the connection's pipeline); then it hands the claimed jobs
// to the handlers.
func (srv *Server) round(lp *loop, now time.Time, all bool) {
	last := -1
	for _, l := range srv.lanes {
		l.credit = lp.credit[l.i]
		lp.send[l.i] = lp.grants[l.i] > 0 || (len(l.outs) > 0 && (all || srv.settleDue(lp, l, now)))
		if lp.send[l.i] {
			last = l.i
		}
	}
	if last < 0 {
		return
	}
	for _, l := range srv.lanes {
		if !lp.send[l.i] {
			continue
		}
		outs := l.outs[:min(len(l.outs), maxRoundOuts)]
		n := lp.grants[l.i]
		if l.i == last {
			lp.exchangeInto(srv, l, outs, n)
			break
		}
		lp.wg.Add(1)
		go func() {
			defer lp.wg.Done()
			lp.exchangeInto(srv, l, outs, n)
		}()
	}
	lp.wg.Wait()
	srv.rounds.Add(1)
	rtt := time.Since(now)
	if lp.rtt == 0 {
		lp.rtt = rtt
	} else {
		lp.rtt += (rtt - lp.rtt) / 4
	}
	end := time.Now()
	srv.health.round(end)
	for _, l := range srv.lanes {
		if !lp.send[l.i] {
			continue
		}
		r := &lp.results[l.i]
		n := lp.grants[l.i]
		lp.inHand -= r.sent
		for _, o := range l.outs[:r.sent] {
			if o.kind == outResult || o.kind == outDead {
				l.fins--
			}
		}
		clear(l.outs[:r.sent])
		l.outs = append(l.outs[:0], l.outs[r.sent:]...)
		if len(l.outs) > 0 {
			l.outsSince = end
		}
		if n > 0 {
			switch {
			case len(r.jobs) >= n:
				l.poll = srv.cfg.PollMin
			case l.wait > 0:
				// The queue's rate stopped the claim: claim again when
				// its window admits another.
				l.credit = 0
				l.pollUntil = end.Add(l.wait)
				l.rateUntil = l.pollUntil
				l.poll = srv.cfg.PollMin
			case len(r.jobs) > 0:
				// Emptied: owed nothing while empty, claimed again
				// after the shortest poll.
				l.credit = 0
				l.pollUntil = end.Add(srv.cfg.PollMin)
				l.poll = srv.cfg.PollMin
			default:
				l.credit = 0
				l.pollUntil = end.Add(l.poll)
				l.poll = min(2*l.poll, srv.cfg.PollMax)
			}
		}
		for i := range r.jobs {
			lp.inHand++
			srv.jobs <- item{lane: l, job: &r.jobs[i], at: r.at}
		}
		*r = result{}
	}
}

// exchangeInto runs l's exchange and keeps its answer in lp.results.
func (lp *loop) exchangeInto(srv *Server, l *lane, outs []outcome, n int) {
	jobs := srv.exchange(l, outs, n)
	lp.results[l.i] = result{jobs: jobs, at: time.Now(), sent: len(outs)}
}

// exchange sends one queue's part of a round and returns the jobs it
// claimed (none on an error, which is recorded).
func (srv *Server) exchange(l *lane, outs []outcome, n int) []emq.Job {
	if l.laneFlow {
		return srv.exchangeLaneFlow(l, outs, n)
	}
	// The lane's scratch: only this goroutine uses it during the round.
	fin, oc, idx, finIdx := l.fin[:0], l.oc[:0], l.idx[:0], l.finIdx[:0] // idx: outs' index of each
	defer func() {
		clear(fin)
		clear(oc)
		l.fin, l.oc, l.idx, l.finIdx = fin[:0], oc[:0], idx[:0], finIdx[:0]
	}()
	for i := range outs {
		o := &outs[i]
		switch o.kind {
		case outResult:
			fin = append(fin, emq.Finish{Kind: emq.FinishComplete, ID: o.job.ID, Token: o.job.Token, Retention: o.retention, Data: o.data})
		case outDead:
			fin = append(fin, emq.Finish{Kind: emq.FinishDead, ID: o.job.ID, Token: o.job.Token, Data: []byte(o.text)})
		case outComplete:
			oc = append(oc, emq.Outcome{Kind: emq.OutcomeComplete, ID: o.job.ID, Token: o.job.Token})
		case outRetry:
			oc = append(oc, emq.Outcome{Kind: emq.OutcomeRetry, ID: o.job.ID, Token: o.job.Token, Delay: o.delay, MaxAttempts: o.max, Error: o.text})
		case outRelease:
			oc = append(oc, emq.Outcome{Kind: emq.OutcomeRelease, ID: o.job.ID, Token: o.job.Token})
		}
		if srv.cfg.OnEvent != nil {
			if o.kind == outResult || o.kind == outDead {
				finIdx = append(finIdx, i)
			} else {
				idx = append(idx, i)
			}
		}
	}
	if len(fin) > 0 {
		srv.calls.Add(1)
		done, err := l.q.Finish(srv.life, fin)
		if err != nil {
			srv.fail(err)
			srv.tell(l, outs, finIdx, nil, nil, nil, err)
		}
		srv.tell(l, outs, nil, nil, done, finIdx, nil)
	}
	if len(oc) == 0 && n == 0 {
		return nil
	}
	var jobs []emq.Job
	if n > 0 {
		jobs = make([]emq.Job, 0, n)
	}
	srv.calls.Add(1)
	var settled []emq.Settled
	var err error
	l.wait = 0
	if l.limited.Load() {
		if len(oc) > 0 && n > 0 {
			srv.calls.Add(1)
		}
		settled, jobs, l.wait, err = l.q.AppendSettleClaimLimited(srv.life, l.settled[:0], jobs, oc, srv.cfg.Retention, srv.cfg.Lease, n)
	} else {
		settled, jobs, err = l.q.AppendSettleClaim(srv.life, l.settled[:0], jobs, oc, srv.cfg.Retention, srv.cfg.Lease, n)
	}
	if err == nil {
		l.settled = settled
	}
	srv.tell(l, outs, idx, settled, nil, nil, err)
	if err != nil {
		srv.fail(err)
		return nil
	}
	return jobs
}

// releaseBuffered takes back the claimed jobs no handler started, to be
// released to pending.
func (srv *Server) releaseBuffered(lp *loop) {
	for {
		select {
		case it := <-srv.jobs:
			it.lane.outs = append(it.lane.outs, outcome{lane: it.lane, job: *it.job, kind: outRelease})
		default:
			return
		}
	}
}

// isClosed reports whether ch is closed (it is never sent on).
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
