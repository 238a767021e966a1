package jobs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/emq"
)

// Schedule is a periodic job: every slot of Spec enqueues Payload into
// Queue, exactly once however many schedulers run it.
type Schedule struct {
	// Name identifies the schedule in its queue (1 to 1,024 bytes): every
	// scheduler that registers the same name in the same queue fires the
	// same slots, once each. Its last fired slot is the field Name of
	// emq:{q}:cron; its jobs' ids are [emq.CronID] of Name and the slot
	// (or, when another schedule's job has that id, the next candidate,
	// [emq.CronIDK]).
	Name string
	// Spec is a cron expression: five fields (minute hour day-of-month
	// month day-of-week), or six with a leading seconds field, or a
	// descriptor (@hourly, @daily, @weekly, @monthly, @yearly), or
	// "@every <duration>" (slots at the multiples of the duration since
	// the Unix epoch, 1ms or more).
	Spec string
	// TZ is the IANA time zone the fields are read in; "" is UTC (never
	// the host's zone, so that schedulers on different hosts agree).
	TZ string
	// Queue receives the jobs. Without it, the queue is named by
	// QueueName (or a [Queue] option in Options) and opened by the
	// scheduler on [SchedulerOptions.Sender] when it starts.
	Queue *emq.Queue
	// QueueName names the queue that receives the jobs, as a [Client]'s
	// [Queue] option and a [ServerConfig] name theirs, for a schedule
	// without Queue; "" (and no [Queue] option) is [DefaultQueue]. It
	// needs [SchedulerOptions.Sender].
	QueueName string
	// Task, when set, is every slot's job: its Type and Body encoded with
	// the [Envelope], so that a [Server] over a [Mux] routes the periodic
	// jobs by type. Options may add MaxRetries, Timeout and Retention to
	// its envelope, and name its queue with [Queue] (any other option is
	// an error at Register). Task and Payload are exclusive.
	Task    *Task
	Options []Option
	// Payload is every slot's job's payload, as given, for a schedule
	// without Task (a peer's format).
	Payload []byte
	// CatchUp is the missed-slot policy: how many missed slots, before the
	// latest due one, are still fired when the schedulers were down (or
	// behind). 0 skips them: only the latest due slot fires.
	CatchUp int
}

// SchedulerOptions configure a [Scheduler]. The zero value is usable.
type SchedulerOptions struct {
	// Now is the scheduler's clock; nil is time.Now. Slots are reckoned on
	// it; a slot fired before its time on the server's clock waits in
	// delayed until then.
	Now func() time.Time
	// Ahead is how far past the server's clock a slot may be and still be
	// fired (a scheduler whose clock runs ahead); default 1 min.
	Ahead time.Duration
	// Retry is the wait after a failed fire before the next try; default
	// 1 s. A fire is safe to repeat: a slot that fired answers
	// [emq.CronAlready].
	Retry time.Duration
	// OnFire, when set, is told every slot fired by this scheduler.
	OnFire func(s *Schedule, slot time.Time, id string, fired emq.CronFired)
	// OnError, when set, is told every failed call.
	OnError func(s *Schedule, err error)
	// Sender, when set, is what the scheduler opens the queues of the
	// schedules that name theirs (Schedule.QueueName or a [Queue]
	// option) on, with QueueOptions, once each, when Run or Start begins.
	Sender conn.Sender
	// QueueOptions are the options of the queues opened on Sender.
	QueueOptions []emq.Option
}

// ErrScheduler matches the errors of [Scheduler.Register] and
// [Scheduler.Run] about the scheduler's own use: a duplicate name, a
// scheduler already running.
var ErrScheduler = errors.New("jobs: scheduler")

// ErrSchedulerClosed is returned by Run after Shutdown.
var ErrSchedulerClosed = errors.New("jobs: scheduler closed")

// ErrSchedulerStarted is returned by Start and Run on a scheduler already
// started (a Scheduler runs once); it matches [ErrScheduler].
var ErrSchedulerStarted = fmt.Errorf("%w: already started", ErrScheduler)

// ErrSchedulerNotStarted is returned by Shutdown on a scheduler that was
// never started (Shutdown still closes it: a later Run or Start returns
// [ErrSchedulerClosed]).
var ErrSchedulerNotStarted = errors.New("jobs: scheduler not started")

// Scheduler fires registered schedules. Run it in any number of
// processes: there is no leader; each slot is taken and its job enqueued
// in one atomic call (emq's cron_fire, a compare-and-set on the
// schedule's last slot), so exactly one job is enqueued per slot whatever
// the schedulers' number, skew or deaths.
type Scheduler struct {
	opts SchedulerOptions

	mu      sync.Mutex
	entries []*entry
	names   map[string]bool // queue + "\x00" + name
	running bool
	closed  bool
	stop    chan struct{} // closed by Shutdown
	done    chan struct{} // closed when Run's goroutines have returned
}

// entry is a registered schedule and its parsed spec.
type entry struct {
	s     Schedule // s.Queue is set when Run or Start opens the queue
	queue string   // its queue's name
	slots slots
}

// NewScheduler returns a scheduler with no schedules.
func NewScheduler(opts SchedulerOptions) *Scheduler {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Ahead <= 0 {
		opts.Ahead = time.Minute
	}
	if opts.Retry <= 0 {
		opts.Retry = time.Second
	}
	return &Scheduler{opts: opts, names: map[string]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
}

// Register adds a schedule, before Run. A spec that does not parse or
// never fires is a *[SpecError] (matching [ErrSpec], and [ErrNeverFires]
// for one with no slot); a schedule without a name, without a Queue when
// the scheduler has no [SchedulerOptions.Sender], naming a queue other
// than its Queue's (or a QueueName other than its [Queue] option's), with
// a negative CatchUp, with a name already registered for its queue, with
// both a Task and a Payload, or with Options other than MaxRetries,
// Timeout, Retention and Queue (only Queue without a Task), matches
// [ErrScheduler]; a Task whose type is not a [ValidToken] is an
// *[EnvelopeError]. Nothing is sent.
func (sc *Scheduler) Register(s Schedule) error {
	switch {
	case s.Queue == nil && sc.opts.Sender == nil:
		return schedErr("schedule " + quoteSpec(s.Name) + " has no queue (a Queue, or a QueueName and SchedulerOptions.Sender)")
	case len(s.Name) == 0 || len(s.Name) > emq.MaxCronName:
		return schedErr("a schedule name is 1 to 1024 bytes")
	case s.CatchUp < 0:
		return schedErr("negative CatchUp")
	}
	sl, err := parseSpec(s.Spec, s.TZ, sc.opts.Now())
	if err != nil {
		return err
	}
	named := s.QueueName
	if s.Task != nil || len(s.Options) > 0 {
		var queue string
		if s.Payload, queue, err = taskPayload(&s); err != nil {
			return err
		}
		if queue != "" && named != "" && queue != named {
			return schedErr("schedule " + quoteSpec(s.Name) + " names two queues, " + quoteSpec(named) + " and " + quoteSpec(queue))
		}
		named = cmp.Or(named, queue)
	} else {
		s.Payload = append([]byte(nil), s.Payload...)
	}
	queue := named
	switch {
	case s.Queue != nil && named != "" && named != s.Queue.Name():
		return schedErr("schedule " + quoteSpec(s.Name) + " names queue " + quoteSpec(named) + " but its Queue is " + quoteSpec(s.Queue.Name()))
	case s.Queue != nil:
		queue = s.Queue.Name()
	default:
		queue = cmp.Or(queue, DefaultQueue)
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	key := queue + "\x00" + s.Name
	switch {
	case sc.running || sc.closed:
		return schedErr("Register after Run")
	case sc.names[key]:
		return schedErr("schedule " + quoteSpec(s.Name) + " registered twice")
	}
	sc.names[key] = true
	sc.entries = append(sc.entries, &entry{s: s, queue: queue, slots: sl})
	return nil
}

// taskPayload encodes a schedule's Task with its Options, and returns the
// queue a [Queue] option names ("" for none). A schedule without a Task
// may only name its queue.
func taskPayload(s *Schedule) ([]byte, string, error) {
	if s.Task != nil && len(s.Payload) > 0 {
		return nil, "", schedErr("schedule " + quoteSpec(s.Name) + " has both a Task and a Payload")
	}
	o := enqueueOpts{retries: -1}
	for _, opt := range s.Options {
		opt(&o)
	}
	switch {
	case o.err != nil:
		return nil, "", o.err
	case o.delay != 0 || !o.at.IsZero() || o.unique != nil:
		return nil, "", schedErr("schedule " + quoteSpec(s.Name) + ": only MaxRetries, Timeout, Retention and Queue apply to a periodic task")
	case s.Task == nil && (o.retries >= 0 || o.timeout != 0 || o.retention != 0):
		return nil, "", schedErr("schedule " + quoteSpec(s.Name) + " has Options but no Task")
	case s.Task == nil:
		return append([]byte(nil), s.Payload...), o.queue, nil
	}
	queue := o.queue
	o.queue = cmp.Or(o.queue, DefaultQueue)
	p, err := payload(nil, s.Task, &o)
	return p, queue, err
}

// openQueues opens, on the scheduler's Sender, the queues of the
// schedules registered without a Queue, once per name.
func (sc *Scheduler) openQueues(ctx context.Context, entries []*entry) error {
	opened := map[string]*emq.Queue{}
	for _, e := range entries {
		if e.s.Queue != nil {
			continue
		}
		q := opened[e.queue]
		if q == nil {
			var err error
			if q, err = emq.Open(ctx, sc.opts.Sender, e.queue, sc.opts.QueueOptions...); err != nil {
				return fmt.Errorf("jobs: scheduler: opening queue %s: %w", quoteSpec(e.queue), err)
			}
			opened[e.queue] = q
		}
		sc.mu.Lock()
		e.s.Queue = q
		sc.mu.Unlock()
	}
	return nil
}

func schedErr(reason string) error { return errors.Join(ErrScheduler, errors.New("jobs: "+reason)) }

// Run fires the schedules until ctx ends or Shutdown is called, then
// returns once every goroutine it started has returned: ctx's error, or
// nil after Shutdown. It first opens the queues the schedules name
// ([SchedulerOptions.Sender]); one that cannot be opened is the error,
// nothing fires, and Run or Start may be tried again. A scheduler runs
// once: Run or Start again is [ErrSchedulerStarted], after Shutdown
// [ErrSchedulerClosed].
func (sc *Scheduler) Run(ctx context.Context) error {
	entries, err := sc.begin(ctx)
	if err != nil {
		return err
	}
	return sc.serve(ctx, entries)
}

// Start is Run on a goroutine of the scheduler's own: it opens the
// queues the schedules name (their error is Start's, and nothing runs),
// starts firing and returns. The schedules fire until Shutdown, which
// stops the goroutine and waits for it; ctx bounds only the start.
func (sc *Scheduler) Start(ctx context.Context) error {
	entries, err := sc.begin(ctx)
	if err != nil {
		return err
	}
	go sc.serve(context.WithoutCancel(ctx), entries)
	return nil
}

// begin marks the scheduler running and opens its queues; on an error it
// is not running.
func (sc *Scheduler) begin(ctx context.Context) ([]*entry, error) {
	sc.mu.Lock()
	switch {
	case sc.closed:
		sc.mu.Unlock()
		return nil, ErrSchedulerClosed
	case sc.running:
		sc.mu.Unlock()
		return nil, ErrSchedulerStarted
	}
	sc.running = true
	entries := sc.entries
	sc.mu.Unlock()
	if err := sc.openQueues(ctx, entries); err != nil {
		sc.mu.Lock()
		sc.running = false
		if sc.closed { // a Shutdown waits for done
			close(sc.done)
		}
		sc.mu.Unlock()
		return nil, err
	}
	return entries, nil
}

// serve fires entries until ctx ends or Shutdown, then closes done.
func (sc *Scheduler) serve(ctx context.Context, entries []*entry) error {
	defer close(sc.done)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for _, e := range entries {
		wg.Go(func() { sc.loop(ctx, e) })
	}
	select {
	case <-ctx.Done():
	case <-sc.stop:
	}
	cancel()
	wg.Wait()
	select {
	case <-sc.stop:
		return nil
	default:
		return context.Cause(ctx)
	}
}

// Shutdown stops Run (or what Start started) and waits for its
// goroutines to return, or for ctx to end. On a scheduler never started
// it returns [ErrSchedulerNotStarted], and closes it all the same.
func (sc *Scheduler) Shutdown(ctx context.Context) error {
	sc.mu.Lock()
	if !sc.closed {
		sc.closed = true
		close(sc.stop)
	}
	running := sc.running
	sc.mu.Unlock()
	if !running {
		return ErrSchedulerNotStarted
	}
	select {
	case <-sc.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// maxFire is the most slots one cron_fire call carries: a call is atomic,
// and a long catch-up would hold the server.
const maxFire = 1000

// loop fires one schedule's slots as they come on the scheduler's clock.
func (sc *Scheduler) loop(ctx context.Context, e *entry) {
	s := &e.s
	last, err := sc.lastFired(ctx, e)
	if err != nil {
		return // ctx ended
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for {
		now := sc.opts.Now()
		wait := time.Duration(0)
		if due := dueSlots(e.slots, last, now, s.CatchUp); len(due) > 0 {
			more := len(due) > maxFire
			due = due[:min(len(due), maxFire)] // the oldest first; the rest next round
			res, err := s.Queue.CronFire(ctx, s.Name, s.Payload, sc.opts.Ahead, due)
			switch {
			case ctx.Err() != nil:
				return
			case err != nil:
				sc.fail(s, err)
				wait = sc.opts.Retry
			default:
				sc.report(s, due, res)
				if res.Last.After(last) {
					last = res.Last
				}
				if !last.Before(due[len(due)-1]) {
					if more {
						continue // the rest of a long catch-up, at once
					}
					break
				}
				// A slot too far ahead of the server: try again later.
				wait = sc.opts.Retry
			}
		}
		if wait == 0 {
			next := e.slots.next(now)
			if next.IsZero() {
				return // no slot to come
			}
			wait = max(next.Sub(sc.opts.Now()), 0)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
	}
}

// lastFired reads the schedule's last fired slot, trying again until it
// succeeds or ctx ends. A schedule that never fired gets its origin, the
// latest slot before now, unless another scheduler gave it one first
// ([emq.Queue.CronStart]): the slots after the origin are fired, and
// caught up when missed, by whichever scheduler comes first; the slots
// before it are not missed ones.
func (sc *Scheduler) lastFired(ctx context.Context, e *entry) (time.Time, error) {
	for {
		last, ok, err := e.s.Queue.CronLast(ctx, []string{e.s.Name})
		if err == nil && ok[0] {
			return last[0], nil
		}
		if err == nil {
			var origin time.Time
			if origin, err = e.s.Queue.CronStart(ctx, e.s.Name, e.slots.latest(sc.opts.Now())); err == nil {
				return origin, nil
			}
		}
		if ctx.Err() != nil {
			return time.Time{}, ctx.Err()
		}
		sc.fail(&e.s, err)
		t := time.NewTimer(sc.opts.Retry)
		select {
		case <-ctx.Done():
			t.Stop()
			return time.Time{}, ctx.Err()
		case <-t.C:
		}
	}
}

func (sc *Scheduler) fail(s *Schedule, err error) {
	if sc.opts.OnError != nil {
		sc.opts.OnError(s, err)
	}
}

func (sc *Scheduler) report(s *Schedule, due []time.Time, res emq.CronResult) {
	for i, f := range res.Fired {
		if f == emq.CronAhead {
			sc.fail(s, &emq.ArgError{Arg: "slot", Reason: due[i].Format(time.RFC3339Nano) + " is ahead of the server's clock"})
		}
		if f.Fired() && sc.opts.OnFire != nil {
			sc.opts.OnFire(s, due[i], res.IDs[i], f)
		}
	}
}
