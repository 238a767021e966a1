package emq

import (
	"context"
	"strconv"
	"time"

	"github.com/echomq/echomq-go/dispatch"
	"github.com/echomq/echomq-go/resp"
)

var (
	scriptClaimLimited = dispatch.NewScript("claim_limited", source("claim_limited"))
	scriptSetLimits    = dispatch.NewScript("set_limits", source("set_limits"))
)

// The limit fields of emq:{q}:meta, and the key of the claim times the
// rate is reckoned from (a zset: member <id>:<attempts>, score the claim's
// server time in ms).
const (
	MetaLimitActive = "limit_active" // at most this many jobs in active
	MetaRateN       = "rate_n"       // at most this many claims ...
	MetaRateMs      = "rate_ms"      // ... in any window of this many ms
	MetaLimitLog    = "limit_log"    // "1": claim_limited appends an audit line per claim to emq:{q}:limit_log
	TypeRate        = "rate"
	TypeLimitLog    = "limit_log"
)

// Limits are a queue's limits, enforced by the server inside
// [Queue.ClaimLimited]: every worker claiming through it shares them. A
// zero field is no limit of that kind.
type Limits struct {
	// Active is the most jobs in active at once: claimed and not yet
	// settled, whichever worker holds them (an expired lease counts until
	// it is reaped).
	Active int
	// Rate claims at most, in any window of Per (a sliding window on the
	// server's clock). Both zero, or both set.
	Rate int
	Per  time.Duration
}

// SetLimits stores l in the queue's meta (the set_limits script), for
// every worker that claims with [Queue.ClaimLimited]; Limits{} clears
// them. Claims through the plain claim verbs ignore limits.
func (q *Queue) SetLimits(ctx context.Context, l Limits) error {
	if l.Active < 0 || l.Rate < 0 || l.Per < 0 {
		return &ArgError{Arg: "limits", Reason: "negative"}
	}
	per, _ := millis("per", l.Per, false)
	if (l.Rate == 0) != (per == 0) {
		return &ArgError{Arg: "limits", Reason: "Rate and Per must both be zero or both be set"}
	}
	var a dispatch.Args
	a.Key(q.keys.Meta)
	a.ArgInt(scriptInt(l.Active))
	a.ArgInt(scriptInt(l.Rate))
	a.ArgInt(per)
	var n int64
	err := q.reaper.Eval(ctx, scriptSetLimits, &a, func(v resp.Value) (err error) {
		n, err = v.AsInt()
		return err
	})
	if err == nil && n != 1 {
		err = &ReplyError{Script: "set_limits", Want: "1"}
	}
	return wrapErr("set_limits", err)
}

// Limits reads the queue's limits from its meta.
func (q *Queue) Limits(ctx context.Context) (Limits, error) {
	v, err := q.sender.Do(ctx, "HMGET", q.keys.Meta, MetaLimitActive, MetaRateN, MetaRateMs)
	if err != nil {
		return Limits{}, err
	}
	if v.Type != resp.Array || len(v.Elems) != 3 {
		return Limits{}, badReply("HMGET", v, "three fields")
	}
	var n [3]int64
	for i, e := range v.Elems {
		if e.Type == resp.Null {
			continue
		}
		if n[i], err = strconv.ParseInt(string(e.Str), 10, 64); err != nil || n[i] < 0 {
			return Limits{}, badReply("HMGET", v, "integers >= 0")
		}
	}
	return Limits{Active: int(n[0]), Rate: int(n[1]), Per: time.Duration(n[2]) * time.Millisecond}, nil
}

// ClaimLimited leases up to n pending jobs, oldest first, under the
// queue's limits (claim_limited): no more than would take active past
// Limits.Active, nor the claims of the last Limits.Per past Limits.Rate,
// both counted on the server in the same step as the claim. Each job is
// claimed exactly as [Queue.ClaimBatch] would claim it, and is settled
// with the same verbs. wait is 0, or, when the rate stopped the claim
// short, how long until the window admits another.
func (q *Queue) ClaimLimited(ctx context.Context, lease time.Duration, n int) (jobs []Job, wait time.Duration, err error) {
	return q.AppendClaimLimited(ctx, nil, lease, n)
}

// AppendClaimLimited is [Queue.ClaimLimited] appending to dst.
func (q *Queue) AppendClaimLimited(ctx context.Context, dst []Job, lease time.Duration, n int) ([]Job, time.Duration, error) {
	ms, err := leaseMillis(lease)
	if err != nil {
		return dst, 0, err
	}
	if n < 1 {
		return dst, 0, &ArgError{Arg: "n", Reason: "fewer than one job"}
	}
	var a dispatch.Args
	q.claimLimitedArgs(&a, ms, n)
	var wait time.Duration
	err = q.reaper.Eval(ctx, scriptClaimLimited, &a, func(v resp.Value) (err error) {
		dst, wait, err = readLimited(v, dst)
		return err
	})
	if err != nil {
		return dst, 0, wrapErr("claim_limited", err)
	}
	return dst, wait, nil
}

// claimLimitedArgs encodes a claim_limited call.
func (q *Queue) claimLimitedArgs(a *dispatch.Args, lease int64, n int) {
	a.Key(q.keys.Pending)
	a.Key(q.keys.Active)
	a.Key(q.keys.Base)
	a.ArgInt(lease)
	a.ArgInt(scriptInt(n))
}

// readLimited parses a claim_limited reply, {wait_ms, jobs}, appending
// the jobs to dst.
func readLimited(v resp.Value, dst []Job) ([]Job, time.Duration, error) {
	if v.Type != resp.Array || len(v.Elems) != 2 {
		return dst, 0, badReply("claim_limited", v, "{wait_ms, jobs}")
	}
	w, err := v.Elems[0].AsInt()
	if err != nil || w < 0 {
		return dst, 0, badReply("claim_limited", v, "{wait_ms, jobs}")
	}
	dst, err = appendJobs(dst, "claim_limited", v.Elems[1])
	return dst, time.Duration(w) * time.Millisecond, err
}

// AppendSettleClaimLimited is [Queue.AppendSettleClaim] with the claim
// under the queue's limits, for a worker's round: the outcomes are
// settled exactly as [Queue.AppendSettleClaim] settles them (with no
// claim), then up to n jobs claimed as [Queue.ClaimLimited] claims them.
// The settlements go first, so the jobs they free from active count for
// the claim; that costs a second round trip when a round both settles
// and claims (a pipeline would not keep the order: a script reloaded
// after NOSCRIPT is sent again after the others). wait is the claim's.
// When the settlements went through and the claim failed, their results
// are appended and the error is the claim's.
func (q *Queue) AppendSettleClaimLimited(ctx context.Context, settled []Settled, jobs []Job, outcomes []Outcome, retention, lease time.Duration, n int) ([]Settled, []Job, time.Duration, error) {
	if n < 0 {
		return settled, jobs, 0, &ArgError{Arg: "n", Reason: "negative"}
	}
	if _, err := leaseMillis(lease); err != nil {
		return settled, jobs, 0, err
	}
	if len(outcomes) > 0 {
		var err error
		if settled, jobs, err = q.AppendSettleClaim(ctx, settled, jobs, outcomes, retention, lease, 0); err != nil {
			return settled, jobs, 0, err
		}
	}
	if n == 0 {
		return settled, jobs, 0, nil
	}
	jobs, wait, err := q.AppendClaimLimited(ctx, jobs, lease, n)
	return settled, jobs, wait, err
}
