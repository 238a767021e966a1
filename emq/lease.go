package emq

import (
	"context"
	"strings"
	"time"

	"github.com/echomq/echomq-go/dispatch"
	"github.com/echomq/echomq-go/resp"
)

// Job is a claimed job: its id, an owned copy of its payload, and the
// fencing token that Complete, Retry and Extend must present.
type Job struct {
	ID      string // the branded id
	Payload []byte // an owned copy of the payload
	// Token is the row's attempts after the claim: 1 on the first claim,
	// 2 after one retry or reap, and so on.
	Token int64
}

// Claim leases the oldest pending job for lease (at least a millisecond;
// the deadline is reckoned on the server's clock) and returns it with ok
// true. ok is false when nothing was claimable: pending is empty, the
// queue is paused, or the popped id was a ghost (an id with no row, which
// the claim drops).
func (q *Queue) Claim(ctx context.Context, lease time.Duration) (Job, bool, error) {
	ms, err := leaseMillis(lease)
	if err != nil {
		return Job{}, false, err
	}
	o := getOp("claim")
	o.args.Key(q.keys.Pending)
	o.args.Key(q.keys.Active)
	o.args.Key(q.keys.Base)
	o.args.ArgInt(ms)
	o.jobs = o.one[:0]
	err = wrapErr("claim", q.exec.Eval(ctx, scriptClaim, &o.args, o.jobsFn))
	var job Job
	got := err == nil && len(o.jobs) == 1
	if got {
		job = o.jobs[0]
	} else if err == nil && len(o.jobs) > 1 {
		err = &ReplyError{Script: "claim", Want: "one job or none"}
	}
	putOp(o, err)
	return job, got, err
}

// ClaimBatch leases up to n pending jobs, oldest first, in one transition
// (claim_batch): each exactly as Claim would. It returns fewer, or none,
// when fewer are claimable, and none while the queue is paused.
func (q *Queue) ClaimBatch(ctx context.Context, lease time.Duration, n int) ([]Job, error) {
	return q.AppendClaimBatch(ctx, nil, lease, n)
}

// AppendClaimBatch is [Queue.ClaimBatch] appending the jobs to dst, so a
// worker can reuse one slice. All the claimed ids share one allocation, as
// do all the payloads (each payload's capacity ends at its length).
func (q *Queue) AppendClaimBatch(ctx context.Context, dst []Job, lease time.Duration, n int) ([]Job, error) {
	ms, err := leaseMillis(lease)
	if err != nil {
		return dst, err
	}
	if n < 1 {
		return dst, &ArgError{Arg: "n", Reason: "fewer than one job"}
	}
	o := getOp("claim_batch")
	o.args.Key(q.keys.Pending)
	o.args.Key(q.keys.Active)
	o.args.Key(q.keys.Base)
	o.args.ArgInt(ms)
	o.args.ArgInt(scriptInt(n))
	o.jobs = dst
	err = wrapErr("claim_batch", q.ext.Eval(ctx, scriptClaimBatch, &o.args, o.jobsFn))
	dst = o.jobs
	putOp(o, err)
	return dst, err
}

// appendJobs parses a claim reply, {id1, payload1, attempts1, ...} or {},
// appending the jobs to dst. The ids share one string and the payloads one
// byte slice.
func appendJobs(dst []Job, script string, v resp.Value) ([]Job, error) {
	if v.Type == resp.Null {
		return dst, nil
	}
	if v.Type != resp.Array || len(v.Elems)%3 != 0 {
		return dst, badReply(script, v, "an array of {id, payload, attempts} triples")
	}
	var ni, np int
	for i := 0; i < len(v.Elems); i += 3 {
		id, p, att := v.Elems[i], v.Elems[i+1], v.Elems[i+2]
		if !isString(id) || !isString(p) || (att.Type != resp.Integer && !isString(att)) {
			return dst, badReply(script, v, "an array of {id, payload, attempts} triples")
		}
		if _, ok := parseToken(att); !ok {
			return dst, badReply(script, v, "attempts as a decimal integer >= 1")
		}
		ni += len(id.Str)
		np += len(p.Str)
	}
	var ids strings.Builder
	ids.Grow(ni)
	for i := 0; i < len(v.Elems); i += 3 {
		ids.Write(v.Elems[i].Str)
	}
	all := ids.String()
	slab := make([]byte, np)
	var io, po int
	for i := 0; i < len(v.Elems); i += 3 {
		id, p := v.Elems[i].Str, v.Elems[i+1].Str
		tok, _ := parseToken(v.Elems[i+2]) // checked above
		n := copy(slab[po:], p)
		dst = append(dst, Job{ID: all[io : io+len(id)], Payload: slab[po : po+n : po+n], Token: tok})
		io += len(id)
		po += n
	}
	return dst, nil
}

func isString(v resp.Value) bool {
	return v.Type == resp.BulkString || v.Type == resp.SimpleString
}

// Complete finishes a claimed job: it leaves active, and its row is
// deleted (retention 0) or kept with state completed for retention. A
// token that no longer holds the lease is [ErrStale] and nothing is
// written.
func (q *Queue) Complete(ctx context.Context, id string, token int64, retention time.Duration) error {
	if err := checkID(id); err != nil {
		return err
	}
	keep, err := millis("retention", retention, false)
	if err != nil {
		return err
	}
	return q.fenced(ctx, scriptComplete, "complete", id, token, keep)
}

// fenced runs a transition that acts only while token holds id's lease
// (complete, extend: KEYS active, row; ARGV id, token, ms) and maps its
// 0 reply to [ErrStale].
func (q *Queue) fenced(ctx context.Context, s *dispatch.Script, name, id string, token, ms int64) error {
	o := getOp(name)
	o.key = q.keys.AppendJob(o.key[:0], id)
	o.args.Key(q.keys.Active)
	o.args.KeyBytes(o.key)
	o.args.Arg(id)
	o.args.ArgInt(token)
	o.args.ArgInt(ms)
	n, err := q.evalInt(ctx, s, o)
	putOp(o, err)
	if err == nil && n != 1 {
		err = ErrStale
	}
	return err
}

// Ack names a claimed job by its id and fencing token, for
// [Queue.CompleteBatch].
type Ack struct {
	ID    string // the job's id
	Token int64  // the token its claim returned
}

// CompleteBatch completes several claimed jobs in one transition
// (complete_batch), each exactly as Complete would: done[i] is true when
// acks[i] completed, false when its token was stale. Every id is checked
// before anything is sent.
func (q *Queue) CompleteBatch(ctx context.Context, acks []Ack, retention time.Duration) (done []bool, err error) {
	return q.AppendCompleteBatch(ctx, nil, acks, retention)
}

// AppendCompleteBatch is [Queue.CompleteBatch] appending the outcomes to
// dst.
func (q *Queue) AppendCompleteBatch(ctx context.Context, dst []bool, acks []Ack, retention time.Duration) ([]bool, error) {
	if len(acks) == 0 {
		return dst, nil
	}
	for _, a := range acks {
		if err := checkID(a.ID); err != nil {
			return dst, err
		}
	}
	keep, err := millis("retention", retention, false)
	if err != nil {
		return dst, err
	}
	o := getOp("complete_batch")
	o.args.Key(q.keys.Active)
	o.args.Key(q.keys.Base)
	o.args.ArgInt(keep)
	for _, a := range acks {
		o.args.Arg(a.ID)
		o.args.ArgInt(a.Token)
	}
	o.flags = dst
	err = wrapErr("complete_batch", q.ext.Eval(ctx, scriptCompleteBatch, &o.args, o.flagsFn))
	dst = o.flags
	o.flags = nil
	if err == nil && len(dst) != len(acks) {
		err = &ReplyError{Script: "complete_batch", Reply: "", Want: "one outcome per job"}
	}
	putOp(o, err)
	return dst, err
}

// RetryOutcome says where [Queue.Retry] sent a job.
type RetryOutcome int

// The outcomes of a retry.
const (
	RetryRequeued RetryOutcome = iota + 1 // back in pending, claimable now
	RetryDelayed                          // in delayed, due after the delay
	RetryDead                             // attempts reached max: in dead
)

// String names the outcome.
func (r RetryOutcome) String() string {
	switch r {
	case RetryRequeued:
		return "requeued"
	case RetryDelayed:
		return "delayed"
	case RetryDead:
		return "dead"
	}
	return "RetryOutcome(?)"
}

// Retry gives back a claimed job that failed, recording errText in the
// row's error field: to dead when its attempts have reached maxAttempts,
// else to pending (delay 0) or delayed (due after delay, on the server's
// clock). A token that no longer holds the lease is [ErrStale].
func (q *Queue) Retry(ctx context.Context, id string, token int64, delay time.Duration, maxAttempts int, errText string) (RetryOutcome, error) {
	if err := checkID(id); err != nil {
		return 0, err
	}
	if maxAttempts < 0 {
		return 0, &ArgError{Arg: "maxAttempts", Reason: "negative"}
	}
	ms, _ := millis("delay", delay, true)
	o := getOp("retry")
	o.key = q.keys.AppendJob(o.key[:0], id)
	o.args.Key(q.keys.Active)
	o.args.KeyBytes(o.key)
	o.args.Key(q.keys.Pending)
	o.args.Key(q.keys.Delayed)
	o.args.Key(q.keys.Dead)
	o.args.Arg(id)
	o.args.ArgInt(token)
	o.args.ArgInt(ms)
	o.args.ArgInt(scriptInt(maxAttempts))
	o.args.Arg(errText)
	n, err := q.evalInt(ctx, scriptRetry, o)
	putOp(o, err)
	switch {
	case err != nil:
		return 0, err
	case n == 2:
		return RetryDead, nil
	case n == 1 && ms == 0:
		return RetryRequeued, nil
	case n == 1:
		return RetryDelayed, nil
	}
	return 0, ErrStale
}

// Extend pushes a held lease's deadline to lease from now, on the server's
// clock. A token that no longer holds the lease is [ErrStale].
func (q *Queue) Extend(ctx context.Context, id string, token int64, lease time.Duration) error {
	if err := checkID(id); err != nil {
		return err
	}
	ms, err := leaseMillis(lease)
	if err != nil {
		return err
	}
	return q.fenced(ctx, scriptExtend, "extend", id, token, ms)
}

// Promote moves up to limit delayed jobs whose due time has come (on the
// server's clock) to pending, and returns how many moved.
func (q *Queue) Promote(ctx context.Context, limit int) (int, error) {
	if limit < 0 {
		return 0, &ArgError{Arg: "limit", Reason: "negative"}
	}
	o := getOp("promote")
	o.args.Key(q.keys.Delayed)
	o.args.Key(q.keys.Pending)
	o.args.Key(q.keys.Base)
	o.args.ArgInt(scriptInt(limit))
	n, err := q.evalInt(ctx, scriptPromote, o)
	putOp(o, err)
	return int(n), err
}

// Reap recovers up to limit active jobs whose lease has expired: to dead
// when their attempts have reached maxAttempts, else back to pending. It
// returns how many it recovered. The reaper runs only as a script: Reap
// sends EVALSHA whatever executor the queue was opened with (see
// [WithExecutor]), never a native EMQ.REAP.
func (q *Queue) Reap(ctx context.Context, limit, maxAttempts int) (int, error) {
	return q.reap(ctx, scriptReap, limit, maxAttempts)
}

// reap runs s, reap or reap_announce (the same keys and arguments), on
// the scripted reaper.
func (q *Queue) reap(ctx context.Context, s *dispatch.Script, limit, maxAttempts int) (int, error) {
	if limit < 0 || maxAttempts < 0 {
		return 0, &ArgError{Arg: "limit or maxAttempts", Reason: "negative"}
	}
	o := getOp(s.Name())
	o.args.Key(q.keys.Active)
	o.args.Key(q.keys.Pending)
	o.args.Key(q.keys.Dead)
	o.args.Key(q.keys.Base)
	o.args.ArgInt(scriptInt(limit))
	o.args.ArgInt(scriptInt(maxAttempts))
	n, err := q.evalInt(ctx, s, o)
	putOp(o, err)
	return int(n), err
}
