package jobs

import (
	"sync"
	"time"

	"github.com/echomq/echomq-go/emq"
)

// The round loop is the server's one conversation with the queues: each
// round sends, to every queue with something to say, one settle_claim
// that settles the outcomes its handlers left and claims that queue's
// share of the free budget (the calls of one round go out together and
// share the connection's pipeline), plus one finish for the jobs whose
// end is waited for. One round is in flight at a time, so outcomes that
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
func (srv *Server) take(scratch []outcome) (rest []outcome, dropped int) {
	scratch = srv.out.Take(scratch[:0])
	for i := range scratch {
		o := &scratch[i]
		if o.kind == outDrop {
			dropped++
			continue
		}
		o.lane.outs = append(o.lane.outs, *o)
		if l := o.lane; l.limited.Load() {
			// Its job leaves active with this outcome: a claim found
			// short by the limit may succeed now (but not before the
			// rate's window admits one).
			l.pollUntil, l.poll = l.rateUntil, srv.cfg.PollMin
		}
	}
	clear(scratch)
	return scratch[:0], dropped
}

// loop is the round loop's own state.
type loop struct {
	inHand  int // jobs claimed whose outcome is not yet sent
	waiting int // outcomes in the lanes' lists
	scratch []outcome
	rtt     time.Duration
	grants  []int     // this round's claims, by lane
	credit  []float64 // the credits they leave, by lane
}

// roundLoop runs rounds until Shutdown was called and every job in hand
// settled, or the server gives up.
func (srv *Server) roundLoop() {
	defer close(srv.loopDone)
	lp := &loop{grants: make([]int, len(srv.lanes)), credit: make([]float64, len(srv.lanes))}
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
		if !stopping && isClosed(srv.stop) {
			stopping = true
			srv.releaseBuffered(lp)
			close(srv.jobs)
		}
		var dropped int
		lp.scratch, dropped = srv.take(lp.scratch)
		lp.inHand -= dropped
		lp.waiting = 0
		for _, l := range srv.lanes {
			lp.waiting += len(l.outs)
		}
		now := time.Now()
		claims := 0
		clear(lp.grants)
		for _, l := range srv.lanes {
			lp.credit[l.i] = l.credit
		}
		if !stopping {
			free := srv.cfg.Concurrency + srv.cfg.Prefetch - (lp.inHand - lp.waiting)
			claims = srv.plan(lp, free, now)
		}
		if srv.ready(lp, claims, stopping || lingered) {
			lingered = false
			srv.round(lp, now)
			continue
		}
		if stopping && lp.inHand == 0 {
			return
		}
		// Wait: for an outcome, for a queue's poll, or for the linger.
		wait := time.Duration(-1)
		if lp.waiting > 0 {
			wait = min(max(lp.rtt, 100*time.Microsecond), 2*time.Millisecond)
		}
		if !stopping {
			for _, l := range srv.lanes {
				if d := l.pollUntil.Sub(now); d > 0 && (wait < 0 || d < wait) {
					wait = d
				}
			}
		}
		if wait >= 0 {
			timer.Reset(wait)
		}
		stop := srv.stop
		if stopping {
			stop = nil
		}
		select {
		case <-stop:
		case <-srv.out.Wake():
		case <-timer.C:
			lingered = lp.waiting > 0
		case <-srv.quit:
		}
		timer.Stop()
	}
}

// ready reports whether a round should go now: when there is something
// to send and either nothing to wait for (now, no handler running, a full
// round) or the handlers are about to run out of jobs.
func (srv *Server) ready(lp *loop, claims int, now bool) bool {
	if lp.waiting == 0 && claims == 0 {
		return false
	}
	buffered := len(srv.jobs)
	running := lp.inHand - buffered - lp.waiting
	switch {
	case now, running <= 0, lp.waiting >= 1000:
		return true
	case claims > 0 && buffered <= srv.cfg.Prefetch/2:
		return true
	}
	return false
}

// plan shares free claims among the queues not known empty, into
// lp.grants (and the credits they leave into lp.credit, committed when
// the round goes), and returns their sum. Weighted: each queue is owed
// free × its weight's share of the eligible weights, fractions carried
// to the next round, so that over many rounds the claims follow the
// weights exactly. Strict: each queue but the first eligible is owed
// StrictFloor × free, the first the rest.
func (srv *Server) plan(lp *loop, free int, now time.Time) int {
	clear(lp.grants)
	if free <= 0 {
		return 0
	}
	total, first := 0, -1
	for _, l := range srv.lanes {
		lp.credit[l.i] = l.credit
		if now.Before(l.pollUntil) {
			continue
		}
		if first < 0 {
			first = l.i
		}
		total += l.weight
	}
	if total == 0 {
		return 0
	}
	sum, best := 0, -1
	for _, l := range srv.lanes {
		if now.Before(l.pollUntil) || (srv.cfg.Strict && l.i == first) {
			continue
		}
		share := float64(l.weight) / float64(total)
		if srv.cfg.Strict {
			share = srv.cfg.StrictFloor
		}
		c := l.credit + float64(free)*share
		g := min(int(c), free-sum)
		lp.credit[l.i] = c - float64(g)
		lp.grants[l.i] = g
		sum += g
		if best < 0 || lp.credit[l.i] > lp.credit[best] {
			best = l.i
		}
	}
	switch {
	case srv.cfg.Strict:
		lp.grants[first] = free - sum
		sum = free
	case sum == 0:
		// Every share is a fraction: the most owed gets one.
		lp.grants[best]++
		lp.credit[best]--
		sum = 1
	}
	return sum
}

// round sends one round: to each queue with outcomes or a grant, a
// finish (when needed) and a settle_claim, all at once; then it hands the
// claimed jobs to the handlers.
func (srv *Server) round(lp *loop, now time.Time) {
	var wg sync.WaitGroup
	type res struct {
		jobs []emq.Job
		at   time.Time
		sent int
	}
	results := make([]res, len(srv.lanes))
	for _, l := range srv.lanes {
		l.credit = lp.credit[l.i]
		n := lp.grants[l.i]
		if len(l.outs) == 0 && n == 0 {
			continue
		}
		outs := l.outs[:min(len(l.outs), 1000)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			jobs := srv.exchange(l, outs, n)
			results[l.i] = res{jobs: jobs, at: time.Now(), sent: len(outs)}
		}()
	}
	wg.Wait()
	srv.rounds.Add(1)
	rtt := time.Since(now)
	if lp.rtt == 0 {
		lp.rtt = rtt
	} else {
		lp.rtt += (rtt - lp.rtt) / 4
	}
	srv.health.round(time.Now())
	for _, l := range srv.lanes {
		r := &results[l.i]
		n := lp.grants[l.i]
		lp.inHand -= r.sent
		clear(l.outs[:r.sent])
		l.outs = append(l.outs[:0], l.outs[r.sent:]...)
		if n > 0 {
			switch {
			case len(r.jobs) >= n:
				l.poll = srv.cfg.PollMin
			case l.wait > 0:
				// The queue's rate stopped the claim: claim again when
				// its window admits another.
				l.credit = 0
				l.pollUntil = time.Now().Add(l.wait)
				l.rateUntil = l.pollUntil
				l.poll = srv.cfg.PollMin
			default:
				l.credit = 0 // owed nothing while empty
				l.pollUntil = time.Now().Add(l.poll)
				l.poll = min(2*l.poll, srv.cfg.PollMax)
			}
		}
		for i := range r.jobs {
			lp.inHand++
			srv.jobs <- item{lane: l, job: &r.jobs[i], at: r.at}
		}
	}
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
func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
