package emq

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/echomq/echomq-go/dispatch"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/resp"
)

// The lanes' and flows' scripts: run as scripts, by EVALSHA, whatever the
// queue's executor, as the operations are. LANES-FLOWS.md describes their
// keys and replies.
var (
	scriptLaneEnqueue  = dispatch.NewScript("lane_enqueue", source("lane_enqueue"))
	scriptLaneClaim    = dispatch.NewScript("lane_claim", source("lane_claim"))
	scriptLaneResume   = dispatch.NewScript("lane_resume", source("lane_resume"))
	scriptFlowSubmit   = dispatch.NewScript("flow_submit", source("flow_submit"))
	scriptFlowComplete = dispatch.NewScript("flow_complete", source("flow_complete"))
)

// Lane bounds.
const (
	// MaxLaneName is the longest lane name, in bytes.
	MaxLaneName = 1024
	// MaxLaneCap is the largest cap (and weight) of a lane.
	MaxLaneCap = 1000
	// MaxLaneBatch is the most jobs one [Queue.LaneEnqueue] admits.
	MaxLaneBatch = 1000
	// laneKeyMax is the longest name used as is in the lane's keys;
	// longer ones are keyed by their SHA-256.
	laneKeyMax = 64
	// laneReapPerClaim is how many running lane jobs each LaneClaim
	// re-checks.
	laneReapPerClaim = 2
)

// ErrInvalidLane is the error class of a lane name that may not name a
// lane. Every such error is a *[LaneError], matching it with errors.Is.
var ErrInvalidLane = errors.New("emq: invalid lane name")

// LaneError says why a lane name was refused: Reason, of the name Lane
// as given. It unwraps to [ErrInvalidLane]; its text quotes the name,
// clipped if it is long.
type LaneError struct{ Lane, Reason string }

func (e *LaneError) Error() string {
	return fmt.Sprintf("%v %s: %s", ErrInvalidLane, quoteClipped(e.Lane), e.Reason)
}
func (e *LaneError) Unwrap() error { return ErrInvalidLane }

// LaneKey returns the form of a lane's name its keys carry: the name
// itself up to 64 bytes, else "#" and the hex SHA-256 of the name. A name
// is 1 to [MaxLaneName] bytes with no '{', '}' or NUL, and does not start
// with '#' (the hashed form's mark); any other is a *[LaneError].
func LaneKey(name string) (string, error) {
	switch {
	case name == "":
		return "", &LaneError{Lane: name, Reason: "empty"}
	case len(name) > MaxLaneName:
		return "", &LaneError{Lane: name, Reason: fmt.Sprintf("%d bytes, longer than %d", len(name), MaxLaneName)}
	case name[0] == '#':
		return "", &LaneError{Lane: name, Reason: "starts with '#'"}
	}
	for i := 0; i < len(name); i++ {
		switch name[i] {
		case '{', '}', 0:
			return "", &LaneError{Lane: name, Reason: fmt.Sprintf("contains %q at byte %d", name[i], i)}
		}
	}
	if len(name) <= laneKeyMax {
		return name, nil
	}
	sum := sha256.Sum256([]byte(name))
	return "#" + hex.EncodeToString(sum[:]), nil
}

// LaneHalt says what a lane does when one of its jobs goes dead.
type LaneHalt uint8

// The halt policies of [LaneOptions].
const (
	// LaneHaltKeep leaves the lane's policy as it is (unset: the queue's
	// default, [Queue.SetLaneHaltDefault], itself "go on" unless set).
	LaneHaltKeep LaneHalt = iota
	// LaneGoOn lets the lane go on with its next job.
	LaneGoOn
	// LaneHaltOnDead halts the lane until [Queue.LaneResume].
	LaneHaltOnDead
)

// LaneOptions configure a lane as [Queue.LaneEnqueue] admits jobs into
// it; a zero field keeps what the lane has.
type LaneOptions struct {
	// Cap is how many of the lane's jobs run at once, 1 to MaxLaneCap
	// (default 1: one at a time, in order).
	Cap int
	// Weight is how many claims in a row the lane gets per turn of the
	// round-robin, 1 to MaxLaneCap (default 1).
	Weight int
	// Halt is what a dead job does to the lane.
	Halt LaneHalt
}

// LaneEnqueue admits one job per payload at the tail of lane, in order
// (the lane_enqueue script, one atomic call), and returns their ids. A
// lane's jobs are claimed by [Queue.LaneClaim] in enqueue order, at most
// its cap at once; until then each is a row in state delayed, parked in
// the delayed set at a score that never falls due. The lane name is
// checked by [LaneKey], the options and the count (1 to MaxLaneBatch)
// before anything is sent.
func (q *Queue) LaneEnqueue(ctx context.Context, lane string, o LaneOptions, payloads ...[]byte) ([]string, error) {
	k, err := LaneKey(lane)
	if err != nil {
		return nil, err
	}
	switch {
	case len(payloads) == 0 || len(payloads) > MaxLaneBatch:
		return nil, &ArgError{Arg: "payloads", Reason: fmt.Sprintf("%d jobs, want 1 to %d", len(payloads), MaxLaneBatch)}
	case o.Cap < 0 || o.Cap > MaxLaneCap:
		return nil, &ArgError{Arg: "Cap", Reason: fmt.Sprintf("%d, want 0 to %d", o.Cap, MaxLaneCap)}
	case o.Weight < 0 || o.Weight > MaxLaneCap:
		return nil, &ArgError{Arg: "Weight", Reason: fmt.Sprintf("%d, want 0 to %d", o.Weight, MaxLaneCap)}
	case o.Halt > LaneHaltOnDead:
		return nil, &ArgError{Arg: "Halt", Reason: "not a LaneHalt"}
	}
	var a dispatch.Args
	a.Key(q.keys.Delayed)
	a.Key(q.keys.Base)
	a.Arg(k)
	a.Arg(lane)
	a.ArgInt(int64(o.Cap))
	a.ArgInt(int64(o.Weight))
	a.Arg([...]string{"", "0", "1"}[o.Halt])
	ids := make([]string, len(payloads))
	for i, p := range payloads {
		ids[i] = q.ids.Next()
		a.Arg(ids[i])
		a.ArgBytes(p)
	}
	if err := q.laneEnqueue(ctx, &a, len(ids)); err != nil {
		return nil, err
	}
	return ids, nil
}

// LaneJob is one job of [Queue.LaneEnqueueMany]: its lane and payload.
type LaneJob struct {
	Lane    string
	Payload []byte
}

// LaneEnqueueMany admits each job at the tail of its own lane, in order,
// in one atomic call (lane_enqueue), keeping each lane's options, and
// returns their ids. Every lane name is checked by [LaneKey] and the
// count (1 to MaxLaneBatch) before anything is sent.
func (q *Queue) LaneEnqueueMany(ctx context.Context, jobs []LaneJob) ([]string, error) {
	if len(jobs) == 0 || len(jobs) > MaxLaneBatch {
		return nil, &ArgError{Arg: "jobs", Reason: fmt.Sprintf("%d jobs, want 1 to %d", len(jobs), MaxLaneBatch)}
	}
	var a dispatch.Args
	a.Key(q.keys.Delayed)
	a.Key(q.keys.Base)
	a.Arg("")
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		k, err := LaneKey(j.Lane)
		if err != nil {
			return nil, err
		}
		a.Arg(k)
		if k == j.Lane {
			a.Arg("")
		} else {
			a.Arg(j.Lane)
		}
		ids[i] = q.ids.Next()
		a.Arg(ids[i])
		a.ArgBytes(j.Payload)
	}
	if err := q.laneEnqueue(ctx, &a, len(ids)); err != nil {
		return nil, err
	}
	return ids, nil
}

// laneEnqueue runs lane_enqueue for n jobs.
func (q *Queue) laneEnqueue(ctx context.Context, a *dispatch.Args, n int) error {
	err := q.reaper.Eval(ctx, scriptLaneEnqueue, a, func(v resp.Value) error {
		if v.Type != resp.Array || len(v.Elems) != n {
			return badReply("lane_enqueue", v, "one flag per job")
		}
		for _, e := range v.Elems {
			if f, err := e.AsInt(); err != nil || f != 1 {
				return ErrDuplicate
			}
		}
		return nil
	})
	return wrapErr("lane_enqueue", err)
}

// LaneClaim leases up to n jobs (1 to 1,000) for lease, as [Queue.ClaimBatch]
// does, from the plain pending jobs and the lanes in turn (the lane_claim
// script): the lanes round-robin by weight, each at most its cap at once,
// in enqueue order. It also re-checks the two oldest running lane jobs,
// so a lane left full by a job that ended without the lane scripts goes
// on. A lane job is settled with [Queue.LaneCompleteClaim],
// [Queue.FlowComplete] or [Queue.FlowRetry].
func (q *Queue) LaneClaim(ctx context.Context, lease time.Duration, n int) ([]Job, error) {
	_, jobs, err := q.LaneCompleteClaim(ctx, nil, 0, lease, n)
	return jobs, err
}

// LaneCompleteClaim completes acks (at most 1,000 claimed jobs, plain or
// of a lane) as [Queue.CompleteBatch] does, each lane job's end making
// its lane's next job claimable, then claims up to n jobs (0 to 1,000) as
// [Queue.LaneClaim] does: a consumer's round in one atomic call.
// done[i] is true when acks[i] completed, false when its token was
// stale. Nothing is published on done:<id> (as CompleteBatch); a flow
// job completed here is resolved for its flow by the next [Queue.Flow],
// as after a peer's core complete: settle flow jobs with
// [Queue.FlowCompleteBatch].
func (q *Queue) LaneCompleteClaim(ctx context.Context, acks []Ack, retention, lease time.Duration, n int) (done []bool, jobs []Job, err error) {
	ms, err := leaseMillis(lease)
	if err != nil {
		return nil, nil, err
	}
	if n < 0 || n > 1000 || (n == 0 && len(acks) == 0) {
		return nil, nil, &ArgError{Arg: "n", Reason: fmt.Sprintf("%d, want 1 to 1000 (0 with acks)", n)}
	}
	if len(acks) > 1000 {
		return nil, nil, &ArgError{Arg: "acks", Reason: fmt.Sprintf("%d jobs, want at most 1000", len(acks))}
	}
	for _, a := range acks {
		if err := checkID(a.ID); err != nil {
			return nil, nil, err
		}
	}
	keep, err := millis("retention", retention, false)
	if err != nil {
		return nil, nil, err
	}
	done, jobs, _, err = q.laneClaim(ctx, ms, n, laneReapPerClaim, keep, acks)
	return done, jobs, err
}

// LaneReap re-checks up to limit (1 to 1,000) of the running lane jobs,
// oldest first, and returns how many it dropped: those that had ended
// without the lane scripts (a peer's core complete or retry, a delete, a
// cancel, a reap to dead), freeing their lanes. Run it beside [Queue.Reap].
func (q *Queue) LaneReap(ctx context.Context, limit int) (int, error) {
	if limit < 1 || limit > 1000 {
		return 0, &ArgError{Arg: "limit", Reason: fmt.Sprintf("%d, want 1 to 1000", limit)}
	}
	_, _, n, err := q.laneClaim(ctx, 1, 0, limit, 0, nil)
	return n, err
}

// laneClaim runs lane_claim.
func (q *Queue) laneClaim(ctx context.Context, ms int64, n, reap int, keep int64, acks []Ack) (done []bool, jobs []Job, reaped int, err error) {
	var a dispatch.Args
	a.Key(q.keys.Pending)
	a.Key(q.keys.Active)
	a.Key(q.keys.Delayed)
	a.Key(q.keys.Base)
	a.ArgInt(ms)
	a.ArgInt(int64(n))
	a.ArgInt(int64(reap))
	a.ArgInt(keep)
	for _, x := range acks {
		a.Arg(x.ID)
		a.ArgInt(x.Token)
	}
	const want = "{reaped, c, flag x c, id, payload, attempts, ...}"
	err = q.reaper.Eval(ctx, scriptLaneClaim, &a, func(v resp.Value) error {
		if v.Type != resp.Array || len(v.Elems) < 2 {
			return badReply("lane_claim", v, want)
		}
		r, err1 := v.Elems[0].AsInt()
		c, err2 := v.Elems[1].AsInt()
		if err1 != nil || err2 != nil || c != int64(len(acks)) || len(v.Elems) < 2+int(c) {
			return badReply("lane_claim", v, want)
		}
		reaped = int(r)
		done = make([]bool, c)
		for i := range done {
			f, err := v.Elems[2+i].AsInt()
			if err != nil {
				return badReply("lane_claim", v, want)
			}
			done[i] = f == 1
		}
		rest := v
		rest.Elems = v.Elems[2+c:]
		jobs, err = appendJobs(nil, "lane_claim", rest)
		return err
	})
	if err != nil {
		return nil, nil, 0, wrapErr("lane_claim", err)
	}
	return done, jobs, reaped, nil
}

// LaneResume lets a lane halted by a dead job ([LaneHaltOnDead]) go on
// with its next job, and reports whether it was halted. The dead job
// stays dead.
func (q *Queue) LaneResume(ctx context.Context, lane string) (bool, error) {
	k, err := LaneKey(lane)
	if err != nil {
		return false, err
	}
	var a dispatch.Args
	a.Key(q.keys.Base)
	a.Arg(k)
	var n int64
	err = q.reaper.Eval(ctx, scriptLaneResume, &a, func(v resp.Value) error {
		n, err = v.AsInt()
		if err != nil {
			return badReply("lane_resume", v, "0 or 1")
		}
		return nil
	})
	if err != nil {
		return false, wrapErr("lane_resume", err)
	}
	return n == 1, nil
}

// SetLaneHaltDefault sets what a dead job does to the lanes that have no
// policy of their own: halt them (true) or let them go on (false, the
// default).
func (q *Queue) SetLaneHaltDefault(ctx context.Context, halt bool) error {
	v := "0"
	if halt {
		v = "1"
	}
	_, err := q.sender.Do(ctx, "HSET", q.keys.Base+"lanecfg", "halt", v)
	return err
}

// LaneInfo is a lane as [Queue.Lane] reads it.
type LaneInfo struct {
	Waiting  int64  // jobs waiting in the lane
	Running  int64  // jobs claimed from it that the scripts have not seen end
	Halted   bool   // halted by a dead job
	HaltedBy string // the id of that job
}

// Lane reads a lane's counts and whether it is halted. It first applies
// the lane job ends flow_complete marked (a lane_claim that claims
// nothing, as the next claim would), then reads with plain reads (not one
// atomic step).
func (q *Queue) Lane(ctx context.Context, lane string) (LaneInfo, error) {
	k, err := LaneKey(lane)
	if err != nil {
		return LaneInfo{}, err
	}
	if _, _, _, err := q.laneClaim(ctx, 1, 0, 0, 0, nil); err != nil {
		return LaneInfo{}, err
	}
	var li LaneInfo
	var state int64
	inRing := false
	b := q.keys.Base
	for _, c := range []struct {
		args []any
		fn   func(resp.Value)
	}{
		{[]any{"LLEN", b + "lane:" + k}, func(v resp.Value) { li.Waiting, _ = v.AsInt() }},
		// lanestate packs R + 2*H + 4*occupants + ... (lane_claim.lua)
		{[]any{"HGET", b + "lanestate", k}, func(v resp.Value) {
			state, _ = strconv.ParseInt(string(v.Str), 10, 64)
			li.Running = state / 4 % 2048
		}},
		{[]any{"HGET", b + "lanehalt", k}, func(v resp.Value) { li.HaltedBy, li.Halted = string(v.Str), !v.IsNull() }},
		// layout 4: a lane in the ring (R) but not there as k is there
		// as '{k{id', holding its head job outside lane:<k>
		{[]any{"LPOS", b + "lanering", k}, func(v resp.Value) { inRing = !v.IsNull() }},
	} {
		v, err := q.sender.Do(ctx, c.args...)
		if err != nil {
			return LaneInfo{}, err
		}
		c.fn(v)
	}
	if state%2 == 1 && !inRing {
		li.Waiting++
	}
	return li, nil
}

// flowLanes checks the lane names of a flow's nodes ([LaneKey]) and
// reports whether one names a lane: such a flow is staged, so that the
// lanes are marked before any of its jobs is released.
func flowLanes(nodes []FlowNode) (bool, error) {
	lanes := false
	for i := range nodes {
		if nodes[i].Lane == "" {
			continue
		}
		if _, err := LaneKey(nodes[i].Lane); err != nil {
			return false, err
		}
		lanes = true
	}
	return lanes, nil
}

// markFlowLanes gives each staged job of a node with a lane its row field
// lane (the lane's key form; a hashed name in lanename), 1,000 a
// pipeline, before the flow is sealed: a released job with the field
// joins its lane (flow_complete, lane_claim). Nothing of a staged flow
// runs, so the marks need not be one atomic step; an error aborts the
// staged flow.
func (q *Queue) markFlowLanes(ctx context.Context, ids []string, nodes []FlowNode) error {
	var b pipeline.Batch
	flush := func() error {
		if b.Len() == 0 {
			return nil
		}
		if err := b.Exec(ctx, q.sender); err != nil {
			return err
		}
		for i := range b.Len() {
			if v := b.Reply(i); v.Type == resp.Error {
				return fmt.Errorf("emq: marking a flow's lanes: %s", v.Str)
			}
		}
		b.Reset()
		return nil
	}
	marked := false
	for i := range nodes {
		if nodes[i].Lane == "" {
			continue
		}
		if !marked {
			// flow_complete looks for a released job's lane only in a
			// queue with lanes (lanestate exists; its '#table' field as
			// lane_enqueue writes it).
			b.Add("HSETNX", q.keys.Base+"lanestate", "#table", strings.Repeat("-", 80))
			marked = true
		}
		k, _ := LaneKey(nodes[i].Lane)
		b.Add("HSET", q.keys.Job(ids[i]), "lane", k)
		if k != nodes[i].Lane {
			b.Add("HSET", q.keys.Base+"lanename", k, nodes[i].Lane)
		}
		if b.Len() >= 1000 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}
