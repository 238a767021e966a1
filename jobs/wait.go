package jobs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/pubsub"
)

// JobError is the error [Client.Wait] returns for a job that ended in
// dead: its last failure text, byte for byte. It matches [ErrCancelled]
// when the job was cancelled, and [ErrDead] always.
type JobError struct {
	Queue, ID string
	Text      string // the row's error field
}

func (e *JobError) Error() string { return "jobs: job " + e.ID + " is dead: " + e.Text }

// Is matches ErrDead, and ErrCancelled for a cancelled job.
func (e *JobError) Is(target error) bool {
	return target == ErrDead || (target == ErrCancelled && e.Text == CancelReason)
}

// ErrDead is matched by the *[JobError] of a job that ended in dead.
var ErrDead = errors.New("jobs: the job is dead")

// ErrNotWaitable is returned by [Client.Wait] for a job that has not
// ended and was enqueued without [Retention]: its end would leave
// nothing to read, so it is never announced.
var ErrNotWaitable = errors.New("jobs: the job was enqueued without Retention: its end cannot be waited for")

// WaitRecheck is the longest [Client.Wait] goes without reading a waited
// job's state again when nothing was heard: the cap of every pause below,
// and the bound for a change no rule covers (a job moved by hand, a gap
// in what the server tells). See Wait for the bounds.
var WaitRecheck = 30 * time.Second

// WaitReapGrace is the first pause of [Client.Wait] after a waited job's
// lease deadline has passed with the job still active (its reap is due):
// Wait reads it again after WaitReapGrace, then after twice as long each
// time, up to [WaitRecheck].
var WaitReapGrace = 250 * time.Millisecond

// WaitPendingRecheck is the first pause of [Client.Wait] after it read a
// waited job waiting to be claimed (pending, or delayed and due, or
// parked in a lane): a peer's canonical core claim and complete announce
// nothing, so Wait reads it again after WaitPendingRecheck, then after
// twice as long each time while it still waits, up to [WaitRecheck].
// Where the server has keyspace notifications on, setting it to
// WaitRecheck saves those reads.
var WaitPendingRecheck = 100 * time.Millisecond

// Wait returns the result of job id of queue once it has completed, or
// its *[JobError] once it is dead, without polling: it subscribes to the
// job's done channel (which the finish and cancel scripts, and a Server's
// reaper, publish on) and to its row's keyspace channel, then reads the
// job's state once, and again only when its end may have come. A
// completed job's result is nil when its handler returned none, or when
// the result's retention passed.
//
// A peer's canonical core scripts (claim, complete, retry, reap) announce
// nothing. Wait sees their end:
//
//   - at once (one round trip after the write) when the server publishes
//     keyspace notifications for hashes and generic commands
//     (notify-keyspace-events holding K with h and g, or KA: "CONFIG SET
//     notify-keyspace-events Khg"): Wait listens on
//     __keyspace@<db>__:<the job's row>, db being ClientConfig.PubSub.DB,
//     which must be the queues' database;
//   - without them, from the job's lease: a job Wait read as active is
//     read again at its lease deadline (the active set's score, on the
//     server's clock), so a peer that completes it is seen by that
//     deadline; past the deadline, while the job is still active (its
//     reap is due), after [WaitReapGrace], then twice as long each time,
//     so a peer's reap at R is seen by R + max(WaitReapGrace, R −
//     deadline);
//   - without them, from the job's wait for a claim: a delayed job is
//     read again at its due time (the delayed set's score, on the
//     server's clock: no claim can take it before), and a job waiting to
//     be claimed (pending, delayed and due, or parked) after
//     [WaitPendingRecheck], then twice as long each time while it still
//     waits (the pause starting again small once it was seen claimed or
//     not yet due). A peer that claims and ends it at T, Wait having
//     first read it waiting at T0, is seen by T + min(T − T0 +
//     WaitPendingRecheck, WaitRecheck): the lag is at most the time it
//     had waited, for a few reads at the start (about
//     log2(WaitRecheck/WaitPendingRecheck), 8 by default) and then one
//     every WaitRecheck, never a busy loop (the job's place in pending
//     would not bound it better: its claim is followed by a run of
//     unknown length, which only a read that finds it active, with its
//     lease, bounds);
//   - any other change within [WaitRecheck] (30 s), or after a gap in the
//     subscription.
//
// A job that has not ended and was enqueued without [Retention] is
// [ErrNotWaitable]; one that names no row (never enqueued, deleted, or
// completed without retention) emq.ErrNotFound. Wait needs
// ClientConfig.PubSub.
func (c *Client) Wait(ctx context.Context, queue, id string) ([]byte, error) {
	if !emq.ValidID(id) {
		return nil, &emq.IDError{ID: id, Reason: "not a branded id"}
	}
	q, err := c.qs.get(ctx, queue)
	if err != nil {
		return nil, err
	}
	w, err := c.waiters(ctx)
	if err != nil {
		return nil, err
	}
	chs := []string{q.Keys().DoneChannel(id), keyspaceChannel(c.cfg.PubSub.DB, q.Keys().Job(id))}
	note := make(chan struct{}, 1)
	if err := w.add(ctx, note, chs); err != nil {
		return nil, err
	}
	defer w.remove(chs, note)
	t := time.NewTimer(WaitRecheck)
	defer t.Stop()
	p := newWaitPace()
	reread := false // the last read found it active but gone from active
	for {
		res, st, done, err := c.check(ctx, q, id)
		if done || err != nil {
			return res, err
		}
		var left time.Duration
		scored := false
		if set := scoreSet(q, st); set != "" {
			left, scored, err = scoreLeft(ctx, q, set, id)
			if err != nil {
				return nil, err
			}
			if st == emq.StateActive && !scored && !reread {
				// It left active between the two reads (a peer's
				// complete or reap ran between them): read its row again
				// at once, once.
				reread = true
				continue
			}
		}
		reread = false
		t.Reset(p.next(st, left, scored))
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-note:
		case <-t.C:
		}
	}
}

// scoreSet is the set whose score says when a job in st may next change
// unannounced: active (its lease deadline) or delayed (its due time);
// "" for any other state.
func scoreSet(q *emq.Queue, st emq.State) string {
	switch st {
	case emq.StateActive:
		return q.Keys().Active
	case emq.StateDelayed:
		return q.Keys().Delayed
	}
	return ""
}

// waitPace is Wait's schedule of reads when nothing is heard: the next
// pause past a lease deadline (grace) and while the job waits for a claim
// (gap), each doubling up to WaitRecheck.
type waitPace struct{ grace, gap time.Duration }

func newWaitPace() waitPace { return waitPace{grace: WaitReapGrace, gap: WaitPendingRecheck} }

// next returns the pause after a read found the job in st, left being its
// score in [scoreSet] less the server's time (scored false when it had
// none there), and steps the schedule.
func (p *waitPace) next(st emq.State, left time.Duration, scored bool) time.Duration {
	var d time.Duration
	switch {
	case scored && left > 0:
		// Active before its deadline, or delayed before its due time:
		// nothing unannounced can end it sooner than that.
		d, p.grace, p.gap = left, WaitReapGrace, WaitPendingRecheck
	case st == emq.StateActive:
		// The lease ran out and no reaper has come yet (or the row says
		// active with no lease, twice): the grace, doubled each time.
		d, p.grace, p.gap = p.grace, min(2*p.grace, WaitRecheck), WaitPendingRecheck
	default:
		// Waiting for a claim (pending, delayed and due, or parked): a
		// peer's core claim and complete may end it unheard at any time.
		d, p.gap, p.grace = p.gap, min(2*p.gap, WaitRecheck), WaitReapGrace
	}
	return max(min(d, WaitRecheck), 0)
}

// keyspaceChannel returns the channel on which a server with keyspace
// notifications on publishes the events of key in database db:
// __keyspace@<db>__:<key>.
func keyspaceChannel(db int, key string) string {
	return "__keyspace@" + strconv.Itoa(db) + "__:" + key
}

// scoreLeft returns how long job id's score in set (active's lease
// deadline, delayed's due time) is ahead of the server's clock (its TIME):
// ok false when it is not in set.
func scoreLeft(ctx context.Context, q *emq.Queue, set, id string) (time.Duration, bool, error) {
	s := q.Sender()
	v, err := s.Do(ctx, "ZSCORE", set, id)
	if err != nil || v.IsNull() {
		return 0, false, err
	}
	deadline, err := v.AsFloat() // a bulk string (RESP2) or a double (RESP3)
	if err != nil {
		return 0, false, fmt.Errorf("jobs: %s score: %w", set, err)
	}
	now, err := s.Do(ctx, "TIME")
	if err != nil {
		return 0, false, err
	}
	if len(now.Elems) != 2 {
		return 0, false, errors.New("jobs: TIME: not two integers")
	}
	sec, err1 := now.Elems[0].AsInt()
	usec, err2 := now.Elems[1].AsInt()
	if err1 != nil || err2 != nil {
		return 0, false, errors.New("jobs: TIME: not two integers")
	}
	nowMs := sec*1000 + usec/1000
	return time.Duration(deadline-float64(nowMs)) * time.Millisecond, true, nil
}

// check reads job id's state: done with its result or error when it
// ended, else the state it is in.
func (c *Client) check(ctx context.Context, q *emq.Queue, id string) (res []byte, st emq.State, done bool, err error) {
	row, ok, err := q.Row(ctx, id)
	switch {
	case err != nil:
		return nil, "", true, err
	case !ok:
		return nil, "", true, emq.ErrNotFound
	case row.State == emq.StateCompleted:
		res, _, err := q.Result(ctx, id)
		return res, "", true, err
	case row.State == emq.StateDead:
		return nil, "", true, &JobError{Queue: q.Name(), ID: id, Text: row.Error}
	}
	if e, err := ParseEnvelope(row.Payload); err != nil || e.Retention <= 0 {
		return nil, "", true, ErrNotWaitable
	}
	return nil, row.State, false, nil
}

// waiters shares one subscription among a client's Waits.
type waiters struct {
	sub *pubsub.Subscription
	mu  sync.Mutex
	m   map[string]map[chan struct{}]struct{}
}

// waiters returns the client's, subscribing the first time.
func (c *Client) waiters(ctx context.Context) (*waiters, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.w != nil {
		return c.w, nil
	}
	if c.cfg.PubSub.Addr == "" {
		return nil, errors.New("jobs: Wait needs ClientConfig.PubSub")
	}
	sub, err := pubsub.New(ctx, pubsub.Options{Options: c.cfg.PubSub})
	if err != nil {
		return nil, err
	}
	c.w = &waiters{sub: sub, m: map[string]map[chan struct{}]struct{}{}}
	go c.w.run()
	return c.w, nil
}

// add gives note a token whenever a message comes on one of chs,
// subscribing (in one call) to those it is the first waiter of.
func (w *waiters) add(ctx context.Context, note chan struct{}, chs []string) error {
	var first []string
	w.mu.Lock()
	for _, ch := range chs {
		set := w.m[ch]
		if set == nil {
			set = map[chan struct{}]struct{}{}
			w.m[ch] = set
			first = append(first, ch)
		}
		set[note] = struct{}{}
	}
	w.mu.Unlock()
	if len(first) > 0 {
		if err := w.sub.Subscribe(ctx, first...); err != nil {
			w.remove(chs, note)
			return err
		}
	}
	return nil
}

// remove drops a waiter, unsubscribing from each of chs after its last.
func (w *waiters) remove(chs []string, note chan struct{}) {
	var last []string
	w.mu.Lock()
	for _, ch := range chs {
		set := w.m[ch]
		delete(set, note)
		if len(set) == 0 {
			delete(w.m, ch)
			last = append(last, ch)
		}
	}
	w.mu.Unlock()
	if len(last) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		w.sub.Unsubscribe(ctx, last...)
		cancel()
	}
}

// run tells the waiters of each message's channel; after a gap, all.
func (w *waiters) run() {
	for {
		m, err := w.sub.Receive(context.Background())
		if err != nil && !errors.Is(err, pubsub.ErrGap) {
			return // closed
		}
		w.mu.Lock()
		if err != nil {
			for _, set := range w.m {
				notify(set)
			}
		} else {
			notify(w.m[m.Channel])
		}
		w.mu.Unlock()
	}
}

// Close ends the client's Wait subscription, if any. The client's other
// verbs go on working.
func (c *Client) Close() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.w == nil {
		return nil
	}
	err := c.w.sub.Close()
	c.w = nil
	return err
}

// notify gives each waiter of set a token.
func notify(set map[chan struct{}]struct{}) {
	for note := range set {
		select {
		case note <- struct{}{}:
		default:
		}
	}
}
