package jobs

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/emq"
)

// DefaultQueue is the queue of a task enqueued without [Queue].
const DefaultQueue = "default"

// ClientConfig configures a [Client].
type ClientConfig struct {
	// PubSub is how [Client.Wait] dials its subscription (the address and
	// credentials of the server the queues live on). Wait needs it; the
	// other verbs do not.
	PubSub conn.Options
	// QueueOptions are passed to emq.Open for each queue the client uses.
	QueueOptions []emq.Option
}

// Client is the producer's face of the job system: it enqueues tasks
// (each a job whose payload is the task's [Envelope]), cancels them and
// waits for their end. It is safe for concurrent use.
type Client struct {
	s   conn.Sender
	cfg ClientConfig
	qs  queues

	wmu sync.Mutex
	w   *waiters // Wait's subscription, made by the first Wait
}

// queues opens each emq.Queue once.
type queues struct {
	s    conn.Sender
	opts []emq.Option
	mu   sync.Mutex
	m    map[string]*emq.Queue
}

// get returns the open queue name, opening it (and checking the fence)
// the first time.
func (qs *queues) get(ctx context.Context, name string) (*emq.Queue, error) {
	qs.mu.Lock()
	q := qs.m[name]
	qs.mu.Unlock()
	if q != nil {
		return q, nil
	}
	q, err := emq.Open(ctx, qs.s, name, qs.opts...)
	if err != nil {
		return nil, err
	}
	qs.mu.Lock()
	defer qs.mu.Unlock()
	if old := qs.m[name]; old != nil {
		return old, nil
	}
	if qs.m == nil {
		qs.m = map[string]*emq.Queue{}
	}
	qs.m[name] = q
	return q, nil
}

// NewClient returns a Client sending through s.
func NewClient(s conn.Sender, cfg ClientConfig) *Client {
	return &Client{s: s, cfg: cfg, qs: queues{s: s, opts: cfg.QueueOptions}}
}

// Option is an option of [Client.Enqueue].
type Option func(*enqueueOpts)

type enqueueOpts struct {
	queue     string
	delay     time.Duration
	at        time.Time
	retries   int
	timeout   time.Duration
	retention time.Duration
	unique    *uniqueOpts // nil: not a unique task
	err       error
}

// Queue enqueues into the named queue instead of [DefaultQueue].
func Queue(name string) Option { return func(o *enqueueOpts) { o.queue = name } }

// ProcessIn makes the task due after d, on the server's clock.
func ProcessIn(d time.Duration) Option {
	return func(o *enqueueOpts) { o.delay, o.at = d, time.Time{} }
}

// ProcessAt makes the task due at t (the delay is t less the local
// clock's now, reckoned then on the server's clock).
func ProcessAt(t time.Time) Option { return func(o *enqueueOpts) { o.at, o.delay = t, 0 } }

// MaxRetries is how many times a failing task is tried again after its
// first attempt (0: never); without it, the server's default applies.
func MaxRetries(n int) Option {
	return func(o *enqueueOpts) {
		if n < 0 {
			o.err = &emq.ArgError{Arg: "MaxRetries", Reason: "negative"}
		}
		o.retries = n
	}
}

// Timeout bounds one attempt of the task: past it the handler's context
// ends and the attempt fails. Without it, the server's default applies.
func Timeout(d time.Duration) Option {
	return func(o *enqueueOpts) {
		if d <= 0 {
			o.err = &emq.ArgError{Arg: "Timeout", Reason: "not positive"}
		}
		o.timeout = d
	}
}

// Retention keeps the job's row, and its result, for d after it
// completes, so that [Client.Wait] and the Inspector can read them; its
// end is then published (see Wait). Without it, a completed job's row is
// deleted (or kept for the server's Retention) and Wait refuses the job.
func Retention(d time.Duration) Option {
	return func(o *enqueueOpts) {
		if d <= 0 {
			o.err = &emq.ArgError{Arg: "Retention", Reason: "not positive"}
		}
		o.retention = d
	}
}

// Info is what [Client.Enqueue] made of a task.
type Info struct {
	// ID is the task's job: the new one, or for a unique task that found
	// its key held (Unique is emq.UniqueExisting or emq.UniqueDebounced),
	// the owner's.
	ID    string
	Queue string
	// State is pending or delayed: the new job's, or a debounced owner's;
	// "" for an existing owner left as it was (it may be running).
	State emq.State
	// Unique is what a unique task's enqueue did (see [Unique]): 0 for a
	// task without a unique key, else emq.UniqueEnqueued, UniqueExisting
	// (nothing written: ID is the owner; [Client.Enqueue] also returns
	// [ErrUniqueExists] then), UniqueReplaced or UniqueDebounced.
	Unique emq.UniqueStatus
	// Replaced is the id of the waiting owner a Replace deleted.
	Replaced string
}

func (c *Client) options(opts []Option) (enqueueOpts, error) {
	o := enqueueOpts{queue: DefaultQueue, retries: -1}
	for _, opt := range opts {
		opt(&o)
	}
	if !o.at.IsZero() {
		o.delay = max(time.Until(o.at), time.Millisecond)
	}
	return o, o.err
}

// payload encodes t with o's options.
func payload(dst []byte, t *Task, o *enqueueOpts) ([]byte, error) {
	if t == nil {
		return dst, errors.New("jobs: nil task")
	}
	e := Envelope{Type: t.Type, Body: t.Body, Retries: o.retries, Timeout: o.timeout, Retention: o.retention}
	if o.unique != nil {
		if k := o.unique.key(t); ValidToken(k) {
			e.Unique = k // the echo, for operators, when it can be one
		}
	}
	return AppendEnvelope(dst, &e)
}

// Enqueue admits t as a job of its queue (see the options) and returns
// its id. A type that is not a [ValidToken] is an *[EnvelopeError] and
// nothing is sent.
func (c *Client) Enqueue(ctx context.Context, t *Task, opts ...Option) (*Info, error) {
	o, err := c.options(opts)
	if err != nil {
		return nil, err
	}
	p, err := payload(nil, t, &o)
	if err != nil {
		return nil, err
	}
	q, err := c.qs.get(ctx, o.queue)
	if err != nil {
		return nil, err
	}
	if o.unique != nil {
		return enqueueUnique(ctx, q, t, p, &o)
	}
	info := &Info{Queue: o.queue, State: emq.StatePending}
	if o.delay > 0 {
		info.State = emq.StateDelayed
		info.ID, err = q.EnqueueIn(ctx, o.delay, p)
	} else {
		info.ID, err = q.Enqueue(ctx, p)
	}
	if err != nil {
		return nil, err
	}
	return info, nil
}

// EnqueueBulk admits tasks, all with the same options, into one queue:
// 1,000 jobs per server call when they are due now (emq's enqueue_batch),
// one pipeline of delayed enqueues otherwise; unique tasks (see [Unique])
// 1,000 per unique_enqueue call, all calls in one pipeline, each task's
// key derived from it (so [UniqueBy] and [UniqueKeyFunc] give each type
// or task its own key, and [Unique] one key to all). A unique task whose
// key was held has its Info's Unique set and no error. infos[i] is tasks[i]'s; a
// task whose enqueue failed has its error in errs[i] (errs is nil when
// none did). Every task is encoded before anything is sent: one that
// cannot be is the error, and nothing is sent.
func (c *Client) EnqueueBulk(ctx context.Context, tasks []*Task, opts ...Option) (infos []Info, errs []error, err error) {
	o, err := c.options(opts)
	if err != nil {
		return nil, nil, err
	}
	ps := make([][]byte, len(tasks))
	for i, t := range tasks {
		if ps[i], err = payload(nil, t, &o); err != nil {
			return nil, nil, err
		}
	}
	q, err := c.qs.get(ctx, o.queue)
	if err != nil {
		return nil, nil, err
	}
	if o.unique != nil {
		return enqueueUniqueBulk(ctx, q, tasks, ps, &o)
	}
	infos = make([]Info, len(tasks))
	if o.delay > 0 {
		for i, p := range ps {
			infos[i] = Info{Queue: o.queue, State: emq.StateDelayed}
			id, err := q.EnqueueIn(ctx, o.delay, p)
			if err != nil {
				if errs == nil {
					errs = make([]error, len(tasks))
				}
				errs[i] = err
			}
			infos[i].ID = id
		}
		return infos, errs, nil
	}
	res, err := q.EnqueueBulk(ctx, ps)
	if err != nil {
		return nil, nil, err
	}
	for i, r := range res {
		infos[i] = Info{ID: r.ID, Queue: o.queue, State: emq.StatePending}
		if r.Err != nil {
			if errs == nil {
				errs = make([]error, len(tasks))
			}
			errs[i] = r.Err
		}
	}
	return infos, errs, nil
}

// ErrCancelled is the cause of a cancelled task's handler context, and
// matched by the error of a job that was cancelled (see [Client.Cancel]).
var ErrCancelled = errors.New("jobs: cancelled")

// CancelReason is the error text a cancelled job keeps in its row.
const CancelReason = "cancelled"

// Cancel ends job id of queue as dead with the error "cancelled", in one
// atomic step, and returns the state it was in. A pending or delayed job
// never runs. A running one's handler context ends with cause
// [ErrCancelled] within about one round trip (the [Server] running it
// hears the cancel on the queue's cancel channel); its outcome is
// dropped. A Server that never hears it loses the job all the same: the
// job's lease no longer holds, and its next lease extension ends the
// handler (cause emq.ErrLeaseLost).
//
// A job already completed or dead is an error matching emq.ErrFinished,
// one that does not exist emq.ErrNotFound: nothing changes.
func (c *Client) Cancel(ctx context.Context, queue, id string) (emq.State, error) {
	q, err := c.qs.get(ctx, queue)
	if err != nil {
		return "", err
	}
	return q.Cancel(ctx, id, CancelReason)
}
