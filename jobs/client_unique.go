package jobs

import (
	"context"
	"errors"
	"time"

	"github.com/echomq/echomq-go/emq"
)

// ErrUniqueExists is returned by [Client.Enqueue] with the Info of a
// unique task whose key was held in mode Keep (or by an active owner, in
// Replace and Debounce): nothing was written, and Info.ID is the owner.
var ErrUniqueExists = errors.New("jobs: the unique key is held by another job")

// uniqueOpts are a unique task's options.
type uniqueOpts struct {
	fixed  string
	by     []string
	fn     func(*Task) string
	mode   emq.UniqueMode
	period time.Duration
}

// key returns the unique key of t.
func (u *uniqueOpts) key(t *Task) string {
	switch {
	case u.fn != nil:
		return u.fn(t)
	case u.by != nil:
		return UniqueKey(t.Type, u.by...)
	}
	return u.fixed
}

func (o *enqueueOpts) uniq() *uniqueOpts {
	if o.unique == nil {
		o.unique = &uniqueOpts{}
	}
	return o.unique
}

// Unique makes the task unique under key (any bytes): while a job holding
// key lives (pending, delayed or active; see [UniqueFor] for a period),
// another enqueue under it does what [UniqueMode] says, Keep by default:
// nothing is written and the owner's id is reported. The key is tied to
// the owner's state on the server: a job that completes, dies or is
// deleted frees it by that fact. A key that is a [ValidToken] is echoed
// in the envelope (u).
//
// Unlike asynq's unique lock (a TTL), nothing holds the key but the
// owning job: a second enqueue is refused only while the first job is
// pending, delayed or active. So a job due now may already have been
// claimed and finished when the second enqueue comes, and then the
// second one is accepted and runs again: uniqueness here means no two
// live at once, not at most one run per period ([UniqueFor] only
// shortens the hold, never past the owner's life; a delayed first job
// keeps its key while it waits).
func Unique(key string) Option {
	return func(o *enqueueOpts) {
		u := o.uniq()
		u.fixed, u.by, u.fn = key, nil, nil
		if key == "" {
			o.err = &emq.ArgError{Arg: "Unique", Reason: "empty key"}
		}
	}
}

// UniqueBy makes the task unique by its type and fields:
// [UniqueKey](task.Type, fields...). With no fields, one job per type.
// Like [Unique], the key is tied to the owner's state: a second enqueue
// is refused only while the first job lives, so one enqueued after a job
// due now has run (it may be claimed and done within a round trip) is
// accepted.
func UniqueBy(fields ...string) Option {
	return func(o *enqueueOpts) {
		u := o.uniq()
		u.fixed, u.by, u.fn = "", append([]string{}, fields...), nil
	}
}

// UniqueKeyFunc makes each task unique by the key f derives from it (for
// [Client.EnqueueBulk], where each task needs its own key); f must not
// return "".
func UniqueKeyFunc(f func(t *Task) string) Option {
	return func(o *enqueueOpts) {
		u := o.uniq()
		u.fixed, u.by, u.fn = "", nil, f
		if f == nil {
			o.err = &emq.ArgError{Arg: "UniqueKeyFunc", Reason: "nil"}
		}
	}
}

// UniqueMode sets what a unique enqueue does when the key is held by a
// waiting owner (pending or delayed): emq.UniqueKeep (the default) keeps
// it, emq.UniqueReplace deletes it and enqueues the new task in its
// place, emq.UniqueDebounce gives it the new task's payload and due time
// (ProcessIn from now), keeping its id. An active owner is always kept.
// Without Unique, UniqueBy or UniqueKeyFunc it is an error.
func UniqueMode(m emq.UniqueMode) Option {
	return func(o *enqueueOpts) {
		if m > emq.UniqueDebounce {
			o.err = &emq.ArgError{Arg: "UniqueMode", Reason: "not a mode"}
		}
		o.uniq().mode = m
	}
}

// UniqueFor holds the key at most d (then it is free whatever its owner's
// state), and never past the owner's life; without it, while the owner
// lives. Without Unique, UniqueBy or UniqueKeyFunc it is an error.
func UniqueFor(d time.Duration) Option {
	return func(o *enqueueOpts) {
		if d <= 0 {
			o.err = &emq.ArgError{Arg: "UniqueFor", Reason: "not positive"}
		}
		o.uniq().period = d
	}
}

// uniqueJob returns t's emq.UniqueJob, or an error for a task without a
// key.
func (o *enqueueOpts) uniqueJob(t *Task, p []byte) (emq.UniqueJob, error) {
	u := o.unique
	k := u.key(t)
	if k == "" {
		return emq.UniqueJob{}, &emq.ArgError{Arg: "Unique", Reason: "no unique key (use Unique, UniqueBy or UniqueKeyFunc)"}
	}
	return emq.UniqueJob{Key: k, Payload: p, Mode: u.mode, Delay: o.delay, Period: u.period}, nil
}

// uniqueInfo fills an Info from a unique enqueue's result.
func (o *enqueueOpts) uniqueInfo(r *emq.UniqueResult) Info {
	in := Info{ID: r.ID, Queue: o.queue, Unique: r.Status, Replaced: r.Replaced}
	if r.Status != emq.UniqueExisting {
		in.State = emq.StatePending
		if o.delay > 0 {
			in.State = emq.StateDelayed
		}
	}
	return in
}

func enqueueUnique(ctx context.Context, q *emq.Queue, t *Task, p []byte, o *enqueueOpts) (*Info, error) {
	j, err := o.uniqueJob(t, p)
	if err != nil {
		return nil, err
	}
	r, err := q.EnqueueUnique(ctx, j)
	if err != nil {
		return nil, err
	}
	info := o.uniqueInfo(&r)
	if r.Status == emq.UniqueExisting {
		return &info, ErrUniqueExists
	}
	return &info, nil
}

func enqueueUniqueBulk(ctx context.Context, q *emq.Queue, tasks []*Task, ps [][]byte, o *enqueueOpts) ([]Info, []error, error) {
	js := make([]emq.UniqueJob, len(tasks))
	for i, t := range tasks {
		var err error
		if js[i], err = o.uniqueJob(t, ps[i]); err != nil {
			return nil, nil, err
		}
	}
	res, err := q.EnqueueUniqueBatch(ctx, js)
	if err != nil {
		return nil, nil, err
	}
	infos := make([]Info, len(tasks))
	var errs []error
	for i := range res {
		infos[i] = o.uniqueInfo(&res[i])
		if res[i].Err != nil {
			if errs == nil {
				errs = make([]error, len(tasks))
			}
			errs[i] = res[i].Err
		}
	}
	return infos, errs, nil
}
