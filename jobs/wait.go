package jobs

import (
	"context"
	"errors"
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

// WaitRecheck is how often [Client.Wait] reads a waited job's state again
// even though no end was announced: a peer's core reap ending a job in
// dead (a lease that ran out past its attempts), or a peer's core script
// completing it, announces nothing (a Server's reaper announces its
// deaths: see reap_announce in PROTOCOL-L4.md).
var WaitRecheck = 30 * time.Second

// Wait returns the result of job id of queue once it has completed, or
// its *[JobError] once it is dead, without polling: it subscribes to the
// job's done channel (which the finish and cancel scripts publish on),
// then reads the job's state once, and again only when its end is
// announced (or at most every WaitRecheck, or after a gap in the
// subscription). A completed job's result is nil when its handler
// returned none, or when the result's retention passed.
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
	ch := q.Keys().DoneChannel(id)
	note, err := w.add(ctx, ch)
	if err != nil {
		return nil, err
	}
	defer w.remove(ch, note)
	t := time.NewTimer(WaitRecheck)
	defer t.Stop()
	for {
		res, done, err := c.check(ctx, q, id)
		if done || err != nil {
			return res, err
		}
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-note:
		case <-t.C:
		}
		t.Reset(WaitRecheck)
	}
}

// check reads job id's state: done with its result or error when it
// ended.
func (c *Client) check(ctx context.Context, q *emq.Queue, id string) (res []byte, done bool, err error) {
	row, ok, err := q.Row(ctx, id)
	switch {
	case err != nil:
		return nil, true, err
	case !ok:
		return nil, true, emq.ErrNotFound
	case row.State == emq.StateCompleted:
		res, _, err := q.Result(ctx, id)
		return res, true, err
	case row.State == emq.StateDead:
		return nil, true, &JobError{Queue: q.Name(), ID: id, Text: row.Error}
	}
	if e, err := ParseEnvelope(row.Payload); err != nil || e.Retention <= 0 {
		return nil, true, ErrNotWaitable
	}
	return nil, false, nil
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

// add subscribes to ch (the first waiter of it) and returns the waiter's
// note: a token whenever ch's job may have ended.
func (w *waiters) add(ctx context.Context, ch string) (chan struct{}, error) {
	note := make(chan struct{}, 1)
	w.mu.Lock()
	set := w.m[ch]
	first := set == nil
	if first {
		set = map[chan struct{}]struct{}{}
		w.m[ch] = set
	}
	set[note] = struct{}{}
	w.mu.Unlock()
	if first {
		if err := w.sub.Subscribe(ctx, ch); err != nil {
			w.remove(ch, note)
			return nil, err
		}
	}
	return note, nil
}

// remove drops a waiter, unsubscribing from ch after its last.
func (w *waiters) remove(ch string, note chan struct{}) {
	w.mu.Lock()
	set := w.m[ch]
	delete(set, note)
	last := len(set) == 0
	if last {
		delete(w.m, ch)
	}
	w.mu.Unlock()
	if last {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		w.sub.Unsubscribe(ctx, ch)
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
