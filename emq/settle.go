package emq

import (
	"context"
	"slices"
	"time"

	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/resp"
)

// OutcomeKind says how [Queue.SettleClaim] settles a claimed job.
type OutcomeKind uint8

// The kinds of [Outcome].
const (
	// OutcomeComplete completes the job, as [Queue.Complete].
	OutcomeComplete OutcomeKind = iota + 1
	// OutcomeRetry gives the job back after a failure, as [Queue.Retry]:
	// Delay, MaxAttempts and Error apply.
	OutcomeRetry
	// OutcomeRelease gives back a job claimed but never started: it
	// returns to pending, claimable at once, its attempts kept (a token is
	// never reused). A worker releases the jobs it claimed ahead when it
	// stops.
	OutcomeRelease
)

// String names the kind.
func (k OutcomeKind) String() string {
	switch k {
	case OutcomeComplete:
		return "complete"
	case OutcomeRetry:
		return "retry"
	case OutcomeRelease:
		return "release"
	}
	return "OutcomeKind(?)"
}

// Outcome is one claimed job for [Queue.SettleClaim] to settle, named by
// its id and the token its claim returned.
type Outcome struct {
	Kind  OutcomeKind
	ID    string
	Token int64
	// For OutcomeRetry: the delay before the job is due again (0 or less
	// requeues it at once; any longer one, up to math.MaxInt64, is kept
	// to the millisecond, rounded up), the attempts after which it is
	// dead instead (at least 0), and the failure text kept in the row's
	// error field.
	Delay       time.Duration
	MaxAttempts int
	Error       string
}

// Settled is what [Queue.SettleClaim] did with one [Outcome].
type Settled uint8

// The results of settling an [Outcome].
const (
	// SettledStale: the token no longer held the lease (the job was
	// reaped, and perhaps claimed again, or already settled); nothing
	// was written. The verbs answer [ErrStale] for it.
	SettledStale     Settled = iota
	SettledCompleted         // completed
	SettledRequeued          // retried into pending, claimable now
	SettledDelayed           // retried into delayed, due after the delay
	SettledDead              // retried, attempts used up: in dead
	SettledReleased          // released into pending
)

// String names the result.
func (s Settled) String() string {
	switch s {
	case SettledStale:
		return "stale"
	case SettledCompleted:
		return "completed"
	case SettledRequeued:
		return "requeued"
	case SettledDelayed:
		return "delayed"
	case SettledDead:
		return "dead"
	case SettledReleased:
		return "released"
	}
	return "Settled(?)"
}

// settleKinds is the order in which settle_claim takes the outcomes: its
// ARGV holds the completions, then the retries, then the releases.
var settleKinds = [...]OutcomeKind{OutcomeComplete, OutcomeRetry, OutcomeRelease}

// SettleClaim settles outcomes and claims up to n jobs, in one transition
// (settle_claim): each outcome exactly as Complete, Retry or the release
// of a job never started would do it, then the claim exactly as
// ClaimBatch (no claim when n is 0). settled[i] is outcomes[i]'s result;
// retention is the completions' (0 deletes their rows), lease the claimed
// jobs'. Every id and argument is checked before anything is sent: one
// that is invalid refuses the call, host-side, and nothing is written;
// any duration that passes is one the script takes, so the server never
// refuses a round for one outcome's delay.
//
// This is a worker's round: the results of its handlers and the jobs for
// its free ones in one server call.
func (q *Queue) SettleClaim(ctx context.Context, outcomes []Outcome, retention, lease time.Duration, n int) (settled []Settled, jobs []Job, err error) {
	return q.AppendSettleClaim(ctx, nil, nil, outcomes, retention, lease, n)
}

// AppendSettleClaim is [Queue.SettleClaim] appending the results to
// settled and the claimed jobs to jobs, so a worker can reuse both. The
// claimed ids share one allocation, as do their payloads. On an error,
// nothing is appended.
func (q *Queue) AppendSettleClaim(ctx context.Context, settled []Settled, jobs []Job, outcomes []Outcome, retention, lease time.Duration, n int) ([]Settled, []Job, error) {
	o, err := q.settleArgs(outcomes, retention, lease, n)
	if err != nil {
		return settled, jobs, err
	}
	o.outcomes, o.settled, o.jobs = outcomes, settled, jobs
	if x, ok := q.ext.(inReplyEvaluator); ok && wire.IsInReply(ctx) {
		err = x.EvalInReply(ctx, scriptSettleClaim, &o.args, o.settleFn)
	} else {
		err = q.ext.Eval(ctx, scriptSettleClaim, &o.args, o.settleFn)
	}
	err = wrapErr("settle_claim", err)
	if err == nil {
		settled, jobs = o.settled, o.jobs
	}
	o.outcomes, o.settled = nil, nil
	putOp(o, err)
	return settled, jobs, err
}

// settleArgs checks the arguments of a settle_claim and encodes them.
func (q *Queue) settleArgs(outcomes []Outcome, retention, lease time.Duration, n int) (*op, error) {
	ms, err := leaseMillis(lease)
	if err != nil {
		return nil, err
	}
	keep, err := millis("retention", retention, false)
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, &ArgError{Arg: "n", Reason: "negative"}
	}
	var count [len(settleKinds) + 1]int64
	for i := range outcomes {
		c := &outcomes[i]
		if err := checkID(c.ID); err != nil {
			return nil, err
		}
		switch {
		case c.Kind < OutcomeComplete || c.Kind > OutcomeRelease:
			return nil, &ArgError{Arg: "Outcome.Kind", Reason: "not a kind of outcome"}
		case c.Kind == OutcomeRetry && c.MaxAttempts < 0:
			return nil, &ArgError{Arg: "Outcome.MaxAttempts", Reason: "negative"}
		}
		count[c.Kind]++
	}
	o := getOp("settle_claim")
	k := &q.keys
	o.args.Key(k.Pending)
	o.args.Key(k.Active)
	o.args.Key(k.Delayed)
	o.args.Key(k.Dead)
	o.args.Key(k.Base)
	o.args.ArgInt(ms)
	o.args.ArgInt(scriptInt(n))
	o.args.ArgInt(keep)
	for _, kind := range settleKinds {
		o.args.ArgInt(count[kind])
	}
	for _, kind := range settleKinds {
		for i := range outcomes {
			c := &outcomes[i]
			if c.Kind != kind {
				continue
			}
			o.args.Arg(c.ID)
			o.args.ArgInt(c.Token)
			if kind == OutcomeRetry {
				d, _ := millis("delay", c.Delay, true)
				o.args.ArgInt(d)
				o.args.ArgInt(scriptInt(c.MaxAttempts))
				o.args.Arg(c.Error)
			}
		}
	}
	return o, nil
}

// readSettle parses a settle_claim reply, {settled, jobs}: it appends one
// result per outcome (in the outcomes' order, mapped back from the
// script's kind-by-kind order) to o.settled and the claimed jobs to
// o.jobs.
func (o *op) readSettle(v resp.Value) error {
	const script = "settle_claim"
	if v.Type != resp.Array || len(v.Elems) != 2 || v.Elems[0].Type != resp.Array {
		return badReply(script, v, "{settled, jobs}")
	}
	res := v.Elems[0].Elems
	if len(res) != len(o.outcomes) {
		return badReply(script, v, "one result per outcome")
	}
	base := len(o.settled)
	for range o.outcomes {
		o.settled = append(o.settled, SettledStale)
	}
	next := 0
	for _, kind := range settleKinds {
		for i := range o.outcomes {
			c := &o.outcomes[i]
			if c.Kind != kind {
				continue
			}
			r, err := res[next].AsInt()
			next++
			s, ok := settledOf(c, r)
			if err != nil || !ok {
				o.settled = o.settled[:base]
				return badReply(script, v, "results 0 or 1 (2 for a retry)")
			}
			o.settled[base+i] = s
		}
	}
	if js := v.Elems[1]; js.Type == resp.Array {
		// Room for the jobs the reply holds, in one allocation of their
		// size (a worker passes no room: its handlers keep pointers into
		// each round's jobs).
		o.jobs = slices.Grow(o.jobs, len(js.Elems)/3)
	}
	jobs, err := appendJobs(o.jobs, script, v.Elems[1])
	if err != nil {
		o.settled = o.settled[:base]
		return err
	}
	o.jobs = jobs
	return nil
}

// settledOf maps a script result to what became of outcome c; ok is false
// for a result its kind never answers.
func settledOf(c *Outcome, r int64) (Settled, bool) {
	switch {
	case r == 0:
		return SettledStale, true
	case r == 1 && c.Kind == OutcomeComplete:
		return SettledCompleted, true
	case r == 1 && c.Kind == OutcomeRelease:
		return SettledReleased, true
	case r == 1 && c.Kind == OutcomeRetry && c.Delay <= 0:
		return SettledRequeued, true
	case r == 1 && c.Kind == OutcomeRetry:
		return SettledDelayed, true
	case r == 2 && c.Kind == OutcomeRetry:
		return SettledDead, true
	}
	return 0, false
}
