package emq

import (
	"context"
	"errors"
	"sync"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/dispatch"
	"github.com/echomq/echomq-go/resp"
)

// The transitions as the executor sends them: one SHA1 each, computed once.
var (
	scriptEnqueue       = dispatch.NewScript("enqueue", source("enqueue"))
	scriptClaim         = dispatch.NewScript("claim", source("claim"))
	scriptComplete      = dispatch.NewScript("complete", source("complete"))
	scriptRetry         = dispatch.NewScript("retry", source("retry"))
	scriptPromote       = dispatch.NewScript("promote", source("promote"))
	scriptReap          = dispatch.NewScript("reap", source("reap"))
	scriptClaimBatch    = dispatch.NewScript("claim_batch", source("claim_batch"))
	scriptExtend        = dispatch.NewScript("extend", source("extend"))
	scriptEnqueueAt     = dispatch.NewScript("enqueue_at", source("enqueue_at"))
	scriptCompleteBatch = dispatch.NewScript("complete_batch", source("complete_batch"))
	scriptEnqueueBatch  = dispatch.NewScript("enqueue_batch", source("enqueue_batch"))
	scriptSettleClaim   = dispatch.NewScript("settle_claim", source("settle_claim"))
	scriptRequeue       = dispatch.NewScript("requeue", source("requeue"))
	scriptDeadFilter    = dispatch.NewScript("dead_filter", source("dead_filter"))
	scriptDelete        = dispatch.NewScript("delete", source("delete"))
	scriptTrimDead      = dispatch.NewScript("trim_dead", source("trim_dead"))
	scriptStats         = dispatch.NewScript("stats", source("stats"))
	scriptRunNow        = dispatch.NewScript("run_now", source("run_now"))
)

// DispatchScripts returns every script this package sends as
// [dispatch.Script]s, in the order of [Scripts]: the transitions, then the
// operations. Preloading them, or comparing SHAs, needs nothing else.
func DispatchScripts() []*dispatch.Script {
	return []*dispatch.Script{
		scriptEnqueue, scriptClaim, scriptComplete, scriptRetry, scriptPromote,
		scriptReap, scriptClaimBatch, scriptExtend, scriptEnqueueAt, scriptCompleteBatch,
		scriptEnqueueBatch, scriptSettleClaim, scriptRequeue, scriptDeadFilter, scriptDelete, scriptTrimDead,
		scriptStats, scriptRunNow,
		// job system (J1)
		scriptFinish, scriptCancel, scriptWorkerBeat, scriptWorkers,
		// job system (J2)
		scriptUniqueEnqueue, scriptCronFire, scriptClaimLimited, scriptSetLimits,
		// lanes and flows
		scriptLaneEnqueue, scriptLaneClaim, scriptLaneResume, scriptFlowSubmit, scriptFlowComplete,
		// dashboard (issue 26): operations
		scriptPayloadHeads,
		// job system (J3)
		scriptReapAnnounce,
	}
}

// ErrDuplicate is returned by Enqueue when the id it minted names a row
// that already exists: another generator minted the same id, which happens
// only when two generators share a node (see [IDGenerator]): two processes
// whose [DefaultNode]s collide, or a generator given with [WithIDGenerator]
// on the node of another.
var ErrDuplicate = errors.New("emq: duplicate job id: the row already exists")

// Queue is one EchoMQ queue on one server: the verbs, each a thin typed
// wrapper over its transition script, with every key built once from the
// validated name. Open makes one; it is safe for concurrent use.
type Queue struct {
	keys   Keys
	sender conn.Sender
	exec   dispatch.Executor // the six core transitions
	ext    dispatch.Executor // the extensions: batches, extend, enqueue_at
	reaper dispatch.Executor // reap: always a script (a *dispatch.Scripted)
	ids    *IDGenerator
}

// Option configures [Open].
type Option func(*options)

type options struct {
	exec, ext dispatch.Executor
	ids       *IDGenerator
	readOnly  bool // OpenReadOnly: the fence is read, never written
	choice    ExecutorChoice
}

// WithExecutor sends the transitions through e instead of the default
// (see [WithExecutorChoice]: [dispatch.NewNative] over the queue's sender
// when the server has the native module, else [dispatch.NewScripted]):
// one executor shared by many queues, say.
//
// Reap is the exception: the reaper runs only as a script, whatever the
// executor. It goes through e or the extension executor when one of them
// is a *[dispatch.Scripted], else through a [dispatch.NewScripted] over
// the queue's sender.
func WithExecutor(e dispatch.Executor) Option { return func(o *options) { o.exec = e } }

// WithExtensionExecutor sends the extension transitions (claim_batch,
// complete_batch, enqueue_batch, extend, enqueue_at) through e, and only
// the six core ones through the queue's executor: for a native module
// that serves the core commands alone, pass
// WithExecutor(dispatch.NewNative(s)) and
// WithExtensionExecutor(dispatch.NewScripted(s)). By default the
// extensions go where the core transitions go.
func WithExtensionExecutor(e dispatch.Executor) Option { return func(o *options) { o.ext = e } }

// WithIDGenerator mints Enqueue's ids with g instead of the process's
// [DefaultIDGenerator]. g must mint in [JobNamespace]. Every generator
// minting into one queue needs a node of its own: two generators on one
// node mint the same ids, and the second enqueue of an id is
// [ErrDuplicate].
func WithIDGenerator(g *IDGenerator) Option { return func(o *options) { o.ids = g } }

// Open validates the queue name, builds its keys, checks the wire fence
// ([CheckFence]), picks the executor ([WithExecutorChoice]: unless told
// otherwise, the native module's commands when the server has them) and
// returns the queue. An invalid name is a *[QueueError] (matching
// [ErrInvalidQueue]) and nothing is sent; a server holding another major
// wire is a *[FenceError] (matching [ErrFence]).
func Open(ctx context.Context, s conn.Sender, name string, opts ...Option) (*Queue, error) {
	keys, err := NewKeys(name)
	if err != nil {
		return nil, err
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.ids == nil {
		o.ids = DefaultIDGenerator()
	} else if o.ids.Namespace() != JobNamespace {
		return nil, &IDError{ID: o.ids.Namespace(), Reason: "the generator must mint in the JOB namespace"}
	}
	if err := o.fence(ctx, s); err != nil {
		return nil, err
	}
	if o.exec == nil {
		if o.exec, err = chooseExecutor(ctx, s, o.choice); err != nil {
			return nil, err
		}
	}
	if o.ext == nil {
		o.ext = o.exec
	}
	return &Queue{keys: keys, sender: s, exec: o.exec, ext: o.ext, reaper: scriptedExecutor(s, o.exec, o.ext), ids: o.ids}, nil
}

// Name returns the queue's name.
func (q *Queue) Name() string { return q.keys.Queue }

// Keys returns the queue's keys.
func (q *Queue) Keys() Keys { return q.keys }

// Executor returns the executor that runs the queue's core transitions.
func (q *Queue) Executor() dispatch.Executor { return q.exec }

// Sender returns the connection the queue's plain reads and writes use.
func (q *Queue) Sender() conn.Sender { return q.sender }

// op is the pooled scratch of one verb call: the script arguments, a key
// buffer, and reply handlers bound once so that passing them to the
// executor allocates nothing.
type op struct {
	args  dispatch.Args
	batch dispatch.Batch
	key   []byte

	// Written by the reply handlers.
	n      int64
	jobs   []Job
	one    [1]Job // Claim's jobs
	script string

	intFn   func(resp.Value) error // reply is an integer → n
	jobsFn  func(resp.Value) error // reply is {id, payload, attempts, ...} → jobs
	flagsFn func(resp.Value) error // reply is {0|1, ...} → flags
	flags   []bool

	settleFn func(resp.Value) error // reply is {settled, jobs} → settled, jobs
	outcomes []Outcome              // what settleFn maps the results to
	settled  []Settled
}

var opPool = sync.Pool{New: func() any {
	o := &op{}
	o.intFn = o.readInt
	o.jobsFn = o.readJobs
	o.flagsFn = o.readFlags
	o.settleFn = o.readSettle
	return o
}}

func getOp(script string) *op {
	o := opPool.Get().(*op)
	o.args.Reset()
	o.script = script
	return o
}

// putOp recycles o, unless the call failed: after a cancelled call the
// executor may, in principle, still hold what o lent it.
func putOp(o *op, err error) {
	if err != nil && !isReplyErr(err) {
		return
	}
	o.jobs, o.flags, o.one[0] = nil, nil, Job{}
	o.outcomes, o.settled = nil, nil
	if cap(o.key) > 1<<12 {
		o.key = nil
	}
	if o.batch.Len() > 0 {
		o.batch.Reset()
	}
	opPool.Put(o)
}

// isReplyErr reports whether err is an answer (a server error or a reply
// of a wrong shape) rather than a failed exchange.
func isReplyErr(err error) bool {
	var se *resp.ServerError
	var re *ReplyError
	return errors.As(err, &se) || errors.As(err, &re) || errors.Is(err, ErrStale)
}

func (o *op) readInt(v resp.Value) error {
	n, err := v.AsInt()
	if err != nil {
		return badReply(o.script, v, "an integer")
	}
	o.n = n
	return nil
}

func (o *op) readJobs(v resp.Value) (err error) {
	o.jobs, err = appendJobs(o.jobs, o.script, v)
	return err
}

func (o *op) readFlags(v resp.Value) error {
	if v.Type != resp.Array {
		return badReply(o.script, v, "an array of integers")
	}
	for _, e := range v.Elems {
		n, err := e.AsInt()
		if err != nil || n < 0 || n > 1 {
			return badReply(o.script, v, "an array of 0 and 1")
		}
		o.flags = append(o.flags, n == 1)
	}
	return nil
}

// evalInt runs s with o's arguments and returns its integer reply.
func (q *Queue) evalInt(ctx context.Context, s *dispatch.Script, o *op) (int64, error) {
	o.n = 0
	x := q.executorFor(s)
	err := x.Eval(ctx, s, &o.args, o.intFn)
	return o.n, wrapErr(s.Name(), err)
}

// executorFor returns the executor that runs s: the extension executor
// for the extensions evalInt sends, the scripted reaper for reap and the
// operations (requeue, delete, trim_dead, stats), the queue's executor
// for the rest.
func (q *Queue) executorFor(s *dispatch.Script) dispatch.Executor {
	switch s {
	case scriptExtend, scriptEnqueueAt:
		return q.ext
	case scriptReap, scriptReapAnnounce, scriptRequeue, scriptDeadFilter, scriptDelete, scriptTrimDead, scriptStats, scriptRunNow:
		return q.reaper
	}
	return q.exec
}

// scriptedExecutor returns the first of xs that is a *dispatch.Scripted,
// or a new one over s: the executor of the transitions that run only as
// scripts, such as reap.
func scriptedExecutor(s conn.Sender, xs ...dispatch.Executor) dispatch.Executor {
	for _, x := range xs {
		if sx, ok := x.(*dispatch.Scripted); ok {
			return sx
		}
	}
	return dispatch.NewScripted(s)
}
