package jobs

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/internal/outbox"
)

// ServerConfig configures a [Server]. A zero field takes its default.
type ServerConfig struct {
	// Queues names the queues served and their weights (at least 1). In
	// weighted mode (the default) each queue's share of the jobs claimed
	// follows its weight while every queue has work: 6, 3, 1 serve
	// 60%, 30%, 10%. Required.
	Queues map[string]int
	// Strict serves the queues by priority instead: the higher weight
	// first, a lower queue only once the higher are empty, but for
	// StrictFloor.
	Strict bool
	// StrictFloor is, in strict mode, the share of the jobs claimed that
	// each lower queue with work still gets under saturating higher ones,
	// so that none starves for ever. Default 0.05; negative for none
	// (pure strict: a lower queue waits while a higher one has work).
	StrictFloor float64
	// Limits are per-queue limits, enforced by the queue's server inside
	// each claim (emq's claim_limited) so that they bind every Server on
	// the queue together: at most Active jobs in active, at most Rate
	// claims in any window of Per (see emq.Limits). NewServer stores each
	// queue's with emq's SetLimits (emq.Limits{} clears them); a key
	// that is not in Queues is an error. A queue served without an entry
	// is claimed under the limits its meta holds (stored by another
	// Server or by `emq limits set`), read at NewServer and again every
	// LimitsInterval; a queue with none is claimed as before, in one
	// settle_claim per round. A limited queue's round costs a second
	// call when it both settles and claims (see emq's
	// AppendSettleClaimLimited), and the jobs a Server claims ahead
	// (Prefetch) count as active.
	Limits map[string]emq.Limits
	// LimitsInterval is how often the limits of the queues without an
	// entry in Limits are read again. Default 5 s; negative: only at
	// NewServer.
	LimitsInterval time.Duration
	// Concurrency is the one budget of handlers running at once, across
	// all queues. Default 16.
	Concurrency int
	// Prefetch is how many jobs beyond Concurrency the server holds
	// claimed, so that a handler that finishes starts its next job at
	// once, and rounds stay big; released to pending at shutdown.
	// Default 256; negative for none.
	Prefetch int
	// Lease, ExtendInterval: a claim's lease and how often a running
	// job's lease is renewed. Defaults 30 s and Lease/3.
	Lease, ExtendInterval time.Duration
	// Timeout bounds one attempt of a task whose envelope sets none:
	// past it the handler's context ends (cause matching ErrJobTimeout)
	// and the attempt fails. A handler that ignores its context holds its
	// place in the budget until it returns (unlike emq.Worker, the Server
	// does not replace it). Default 30 min.
	Timeout time.Duration
	// MaxRetries is the retries of a task whose envelope sets none.
	// Default 24 (25 attempts).
	MaxRetries int
	// BackoffBase and BackoffMax shape the delay before a retry: base
	// doubled per attempt, at most max, with equal jitter. Defaults 1 s
	// and 10 min. Backoff, when set, replaces that rule.
	BackoffBase, BackoffMax time.Duration
	Backoff                 func(attempt int64, err error) time.Duration
	// LaneFlowQueues names queues of Queues that hold lane or flow jobs
	// (see lane.go): they are claimed with emq's LaneClaim and settled
	// with FlowComplete/FlowRetry instead of settle_claim.
	LaneFlowQueues []string
	// FlowQueues names queues of Queues that hold flow jobs and no lane
	// jobs: settled as LaneFlowQueues are, but a round's completions and
	// its claim go in one FlowCompleteClaim call (plain pending jobs
	// only: a lane job would never be claimed there).
	FlowQueues []string
	// Retention keeps a completed row of a task enqueued without
	// Retention; default 0 (deleted).
	Retention time.Duration
	// ResultRetention keeps a result returned by a handler of a task
	// enqueued without Retention. Default 10 min.
	ResultRetention time.Duration
	// MaxResult bounds a result; a larger one ends the job in dead with
	// an *[ResultTooLargeError]. Default 1 MiB.
	MaxResult int
	// PollMin and PollMax bound the wait before claiming again from a
	// queue found empty, doubling. Defaults 5 ms and 1 s.
	PollMin, PollMax time.Duration
	// PromoteInterval and ReapInterval pace each queue's promoter and
	// reaper (±20% jitter). Defaults 1 s and 5 s; negative disables.
	PromoteInterval, ReapInterval time.Duration
	// DeadMaxAge and DeadMaxCount bound each queue's dead set, trimmed
	// every TrimInterval (emq's TrimDead): defaults 90 days, 10,000 and
	// 1 min; a negative TrimInterval disables the trimmer.
	DeadMaxAge   time.Duration
	DeadMaxCount int
	TrimInterval time.Duration
	// Heartbeat paces the server's registration in each queue's registry
	// of workers (see [Inspector.Workers]); the entry lives 1.5×Heartbeat
	// without a beat. Default 5 s; negative: not registered.
	Heartbeat time.Duration
	// PubSub is how the server dials its subscription to the queues'
	// cancel channels. When Addr is "", the sender's Options() is used
	// if it has one (a *conn.Client does); else there is no subscription
	// and a cancelled running job ends only at its next lease extension.
	PubSub conn.Options
	// ShutdownTimeout bounds Run's graceful shutdown. Default 10 s.
	ShutdownTimeout time.Duration
	// OnError, when set, is told every error the server meets (a round
	// that failed, a handler's result that could not be sent); it must
	// not block.
	OnError func(error)
	// OnEvent, when set, is told each job's settlement (completed,
	// retried, dead, ...) once the server answered, from the round
	// loop's goroutines; it must not block.
	OnEvent func(Event)
	// QueueOptions are passed to emq.Open for each queue.
	QueueOptions []emq.Option
}

func (c ServerConfig) withDefaults() (ServerConfig, error) {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if len(c.Queues) == 0 {
		return c, &emq.ArgError{Arg: "Queues", Reason: "none"}
	}
	for q, w := range c.Queues {
		if err := emq.ValidQueue(q); err != nil {
			return c, err
		}
		if w < 1 {
			return c, &emq.ArgError{Arg: "Queues", Reason: "weight of " + q + " below 1"}
		}
	}
	for q := range c.Limits {
		if _, ok := c.Queues[q]; !ok {
			return c, &emq.ArgError{Arg: "Limits", Reason: "queue " + q + " is not in Queues"}
		}
	}
	if c.StrictFloor == 0 {
		c.StrictFloor = 0.05
	}
	c.StrictFloor = min(max(c.StrictFloor, 0), 0.5)
	if c.Concurrency <= 0 {
		c.Concurrency = 16
	}
	if c.Prefetch == 0 {
		c.Prefetch = 256
	}
	c.Prefetch = max(c.Prefetch, 0)
	def(&c.Lease, 30*time.Second)
	if c.Lease < time.Millisecond {
		return c, &emq.ArgError{Arg: "Lease", Reason: "under a millisecond"}
	}
	def(&c.ExtendInterval, c.Lease/3)
	if c.ExtendInterval >= c.Lease {
		return c, &emq.ArgError{Arg: "ExtendInterval", Reason: "not shorter than Lease"}
	}
	def(&c.Timeout, 30*time.Minute)
	if c.MaxRetries == 0 {
		c.MaxRetries = 24
	}
	c.MaxRetries = max(c.MaxRetries, 0)
	def(&c.BackoffBase, time.Second)
	def(&c.BackoffMax, 10*time.Minute)
	def(&c.ResultRetention, 10*time.Minute)
	if c.MaxResult <= 0 {
		c.MaxResult = 1 << 20
	}
	def(&c.PollMin, 5*time.Millisecond)
	def(&c.PollMax, time.Second)
	c.PollMax = max(c.PollMax, c.PollMin)
	def(&c.PromoteInterval, time.Second)
	def(&c.ReapInterval, 5*time.Second)
	def(&c.DeadMaxAge, 90*24*time.Hour)
	if c.DeadMaxCount == 0 {
		c.DeadMaxCount = 10_000
	}
	def(&c.TrimInterval, time.Minute)
	def(&c.Heartbeat, 5*time.Second)
	def(&c.LimitsInterval, 5*time.Second)
	def(&c.ShutdownTimeout, 10*time.Second)
	return c, nil
}

// backoff is the delay before retrying a job whose attempt failed.
func (c *ServerConfig) backoff(attempt int64, err error) time.Duration {
	if c.Backoff != nil {
		return c.Backoff(attempt, err)
	}
	d := c.BackoffBase
	for i := int64(1); i < attempt && d < c.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, c.BackoffMax)
	if half := int64(d / 2); half > 0 {
		d = time.Duration(half + rand.Int64N(half+1))
	}
	return d
}

// ResultTooLargeError is the error of a job whose handler returned a
// result over [ServerConfig].MaxResult: the job goes to dead with it.
type ResultTooLargeError struct{ Size, Max int }

func (e *ResultTooLargeError) Error() string {
	return fmt.Sprintf("jobs: result of %d bytes is over the limit of %d", e.Size, e.Max)
}

// lane is one queue served: its emq queue, its weight and the round
// loop's state for it.
type lane struct {
	i      int
	name   string
	weight int
	q      *emq.Queue
	cancel string // its cancel channel
	// limited: claimed through claim_limited (the queue has limits).
	limited atomic.Bool
	// laneFlow: claimed and settled by exchangeLaneFlow (lane.go).
	laneFlow bool
	// flowOnly: a queue of FlowQueues (laneFlow too): settled and claimed
	// in one FlowCompleteClaim call.
	flowOnly bool

	// Owned by the round loop.
	outs      []outcome // to send in a next round
	outsSince time.Time // when the oldest of outs came (or last waited a round)
	fins      int       // of outs, finishes (results and deaths: waited for)
	credit    float64   // claims owed by the weights, fractional
	pollUntil time.Time // found empty: not claimed from before then
	rateUntil time.Time // limited: its rate admits no claim before then
	poll      time.Duration

	// The round's scratch for this queue's exchange, reused.
	fin     []emq.Finish
	oc      []emq.Outcome
	idx     []int
	finIdx  []int
	settled []emq.Settled
	wait    time.Duration // the last limited claim's wait (rate), set by exchange

	served atomic.Uint64 // jobs whose handler ran
}

// Server runs handlers over many queues at once with one concurrency
// budget: see the package doc, "Server".
type Server struct {
	cfg   ServerConfig
	h     Handler
	s     conn.Sender
	lanes []*lane
	byCh  map[string]*lane // cancel channel → lane
	wid   string

	mu      sync.Mutex
	started bool
	stopped bool
	cause   error         // why it stopped by itself (ErrSenderGone), or nil
	unwatch chan struct{} // closed once the loops are done: watchSender returns

	life    context.Context // the server's exchanges; cancelled when it gives up
	endLife context.CancelFunc
	quit    chan struct{} // closed when the server gives up
	jobs    chan item
	out     *outbox.Box[outcome]
	slots   []*slot // one per handler goroutine
	early   early   // cancels heard for jobs not yet running
	abandon atomic.Bool

	// The components (see server_parts.go): the claimer first, stopped
	// first; then the rest, stopped in order once it is done.
	claimer *claimer
	rest    []part
	procWG  sync.WaitGroup
	done    chan struct{}

	health healthState
	rounds atomic.Uint64 // rounds sent
	calls  atomic.Uint64 // server calls of the rounds (settle_claim, claim_limited, finish)
}

// Stats counts a server's conversation with the queues.
type Stats struct {
	Rounds uint64 // rounds sent (a round is one call per queue with something to say)
	Calls  uint64 // server calls the rounds made: settle_claim, claim_limited and finish
}

// Stats returns the server's counters.
func (srv *Server) Stats() Stats {
	return Stats{Rounds: srv.rounds.Load(), Calls: srv.calls.Load()}
}

// NewServer returns a server running h over the queues of cfg, sending
// through s. It opens each queue (checking the fence) but starts nothing:
// see Start and Run.
func NewServer(ctx context.Context, s conn.Sender, h Handler, cfg ServerConfig) (*Server, error) {
	if s == nil || h == nil {
		return nil, errors.New("jobs: NewServer needs a sender and a handler")
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if cfg.PubSub.Addr == "" {
		if o, ok := s.(interface{ Options() conn.Options }); ok {
			cfg.PubSub = o.Options()
		}
	}
	srv := &Server{cfg: cfg, h: h, s: s, byCh: map[string]*lane{}, done: make(chan struct{})}
	names := make([]string, 0, len(cfg.Queues))
	for q := range cfg.Queues {
		names = append(names, q)
	}
	// Highest weight first (strict mode's priority), then by name.
	sort.Slice(names, func(i, j int) bool {
		wi, wj := cfg.Queues[names[i]], cfg.Queues[names[j]]
		return wi > wj || (wi == wj && names[i] < names[j])
	})
	for i, name := range names {
		q, err := emq.Open(ctx, s, name, cfg.QueueOptions...)
		if err != nil {
			return nil, err
		}
		l := &lane{i: i, name: name, weight: cfg.Queues[name], q: q, cancel: q.Keys().CancelChannel(), poll: cfg.PollMin}
		l.flowOnly = slices.Contains(cfg.FlowQueues, name)
		l.laneFlow = l.flowOnly || slices.Contains(cfg.LaneFlowQueues, name)
		lim, own := cfg.Limits[name]
		if own {
			err = q.SetLimits(ctx, lim)
		} else {
			lim, err = q.Limits(ctx)
		}
		if err != nil {
			return nil, err
		}
		l.limited.Store(lim != emq.Limits{})
		srv.lanes = append(srv.lanes, l)
		srv.byCh[l.cancel] = l
	}
	host, _ := os.Hostname()
	srv.wid = host + ":" + strconv.Itoa(os.Getpid()) + ":" + strconv.FormatUint(rand.Uint64()&0xffffffff, 16)
	return srv, nil
}

// ID returns the server's id in the registries of workers:
// host:pid:random.
func (srv *Server) ID() string { return srv.wid }

// ErrServerStarted is returned by Start and Run on a server already
// started (a Server runs once).
var ErrServerStarted = errors.New("jobs: server already started")

// ErrServerNotStarted is returned by Shutdown on a server never started.
var ErrServerNotStarted = errors.New("jobs: server not started")

// ErrSenderGone is matched by the error of a server that stopped by
// itself because its sender ended for good: a *conn.Conn that failed or
// was closed, a *conn.Client that was closed (a Client's faults are not
// its end: it redials, and the server's rounds resume on the new
// connection). See [Health].Stopped.
var ErrSenderGone = errors.New("jobs: the server's connection is gone")

// Start starts the server's goroutines and returns at once.
func (srv *Server) Start() error {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.started {
		return ErrServerStarted
	}
	srv.started = true
	srv.life, srv.endLife = context.WithCancel(context.Background())
	srv.quit = make(chan struct{})
	srv.jobs = make(chan item, srv.cfg.Concurrency+srv.cfg.Prefetch)
	srv.out = outbox.New[outcome]()
	srv.health.start(time.Now())
	srv.procWG.Add(srv.cfg.Concurrency)
	for range srv.cfg.Concurrency {
		s := newSlot()
		srv.slots = append(srv.slots, s)
		go srv.process(s)
	}
	srv.unwatch = make(chan struct{})
	srv.claimer = &claimer{srv: srv}
	srv.rest = []part{&extender{srv: srv}, &maintainer{srv: srv}, &trimmer{srv: srv}, &beater{srv: srv}, &listener{srv: srv}}
	srv.claimer.start()
	for _, p := range srv.rest {
		p.start()
	}
	if d, ok := srv.s.(interface{ Done() <-chan struct{} }); ok {
		go srv.watchSender(d.Done())
	}
	return nil
}

// watchSender stops the server when its sender ends (gone is closed),
// until the server's loops are done.
func (srv *Server) watchSender(gone <-chan struct{}) {
	select {
	case <-srv.unwatch:
		return
	case <-gone:
	}
	cause := ErrSenderGone
	if e, ok := srv.s.(interface{ Err() error }); ok && e.Err() != nil {
		cause = fmt.Errorf("%w: %w", ErrSenderGone, e.Err())
	}
	srv.fail(cause)
	srv.health.gone(cause)
	srv.mu.Lock()
	already := srv.stopped
	srv.stopped, srv.cause = true, cause
	srv.mu.Unlock()
	// Nothing more can be sent: what is in hand stays active, for the
	// reaper, and the running handlers' contexts end (cause).
	srv.giveUp(cause)
	if !already { // else the Shutdown under way finishes
		srv.finish()
	}
}

// Shutdown stops claiming, releases the jobs claimed ahead that no
// handler started (back to pending, attempts kept), waits for the running
// handlers until ctx ends and settles what they return, then leaves the
// registries of workers. When ctx ends first the running handlers'
// contexts end (cause emq.ErrShutdown), outcomes not yet sent are
// dropped and their jobs stay active for the reaper; Shutdown returns
// ctx's error once the server's own goroutines stopped (the handlers'
// return when they do: [Server.Done]). On a server never started it is
// [ErrServerNotStarted]; on one that stopped by itself (its sender gone)
// it returns that cause, matching [ErrSenderGone].
func (srv *Server) Shutdown(ctx context.Context) error {
	srv.mu.Lock()
	if !srv.started {
		srv.mu.Unlock()
		return ErrServerNotStarted
	}
	if srv.stopped {
		srv.mu.Unlock()
		select {
		case <-srv.done:
			return srv.stopCause()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	srv.stopped = true
	srv.mu.Unlock()
	stopGiveUp := context.AfterFunc(ctx, func() { srv.giveUp(emq.ErrShutdown) })
	defer stopGiveUp()
	srv.finish()
	select {
	case <-srv.done:
		return srv.stopCause()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stopCause is why the server stopped by itself (ErrSenderGone), or nil.
func (srv *Server) stopCause() error {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return srv.cause
}

// finish stops claiming and waits for the round loop and the background
// parts; Done closes once the handlers returned too.
func (srv *Server) finish() {
	srv.claimer.stop()
	for _, p := range srv.rest {
		p.stop()
	}
	close(srv.unwatch)
	srv.health.stopped()
	go func() {
		srv.procWG.Wait()
		for _, s := range srv.slots {
			s.mu.Lock()
			s.timer.Stop()
			s.mu.Unlock()
		}
		srv.endLife()
		close(srv.done)
	}()
}

// giveUp abandons what is left: nothing more is sent, exchanges in flight
// are cancelled, and running handlers' contexts end with cause.
func (srv *Server) giveUp(cause error) {
	if srv.abandon.Swap(true) {
		return
	}
	srv.cancelAll(cause)
	close(srv.quit)
	srv.endLife()
}

// Done is closed when every goroutine of the server, handlers included,
// has returned after Shutdown.
func (srv *Server) Done() <-chan struct{} { return srv.done }

// Run starts the server and runs until ctx ends (or the server stops by
// itself, its sender gone), then shuts down within ShutdownTimeout and
// returns Shutdown's error.
func (srv *Server) Run(ctx context.Context) error {
	if err := srv.Start(); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case <-srv.quit: // gave up by itself (its sender gone): Shutdown says why
	}
	sctx, cancel := context.WithTimeout(context.Background(), srv.cfg.ShutdownTimeout)
	defer cancel()
	return srv.Shutdown(sctx)
}

// fail records err in the health and tells OnError.
func (srv *Server) fail(err error) {
	srv.health.fail(err)
	if srv.cfg.OnError != nil {
		srv.cfg.OnError(err)
	}
}
