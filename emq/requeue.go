package emq

import (
	"context"
	"errors"
	"time"

	"github.com/echomq/echomq-go/dispatch"
	"github.com/echomq/echomq-go/resp"
)

// ErrNotDead is returned by [Queue.Requeue] for an id that is not in the
// dead set: it is in another state, or names no job. Nothing was written.
var ErrNotDead = errors.New("emq: the job is not dead")

// idChunk is the most ids one requeue or delete call carries: a call is
// atomic, and a long one would hold the server.
const idChunk = 1000

// Requeue moves a dead job back to pending (the requeue script): its row
// gets state pending and keeps its attempts and error, and it is claimed
// in id order with the rest. An id not in dead is [ErrNotDead].
//
// The attempts are the job's fencing token and never go back, so a
// requeued job whose attempts have reached the worker's MaxAttempts has
// one more run: should it fail again, it goes straight back to dead.
func (q *Queue) Requeue(ctx context.Context, id string) error {
	done, err := q.RequeueBatch(ctx, []string{id})
	if err == nil && !done[0] {
		err = ErrNotDead
	}
	return err
}

// RequeueBatch requeues each dead job of ids as [Queue.Requeue] does,
// 1,000 ids per atomic call: done[i] is true when ids[i] was dead and is
// now pending, false when it was not dead. Every id is checked before
// anything is sent.
func (q *Queue) RequeueBatch(ctx context.Context, ids []string) (done []bool, err error) {
	err = q.eachChunk(ctx, ids, scriptRequeue, []string{q.keys.Dead, q.keys.Pending, q.keys.Base}, func(v resp.Value) error {
		for _, e := range v.Elems {
			n, err := e.AsInt()
			if err != nil || n < 0 || n > 1 {
				return badReply("requeue", v, "an array of 0 and 1")
			}
			done = append(done, n == 1)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return done, nil
}

// eachChunk checks every id, then runs s (an operation script taking
// keys, then ids as ARGV, and answering one array element per id) on
// ids, idChunk at a time; fn reads each chunk's reply, whose length it
// can trust to match the chunk's.
func (q *Queue) eachChunk(ctx context.Context, ids []string, s *dispatch.Script, keys []string, fn func(resp.Value) error) error {
	for _, id := range ids {
		if err := checkID(id); err != nil {
			return err
		}
	}
	var a dispatch.Args
	for start := 0; start < len(ids); start += idChunk {
		chunk := ids[start:min(start+idChunk, len(ids))]
		a.Reset()
		for _, k := range keys {
			a.Key(k)
		}
		for _, id := range chunk {
			a.Arg(id)
		}
		err := q.reaper.Eval(ctx, s, &a, func(v resp.Value) error {
			if v.Type != resp.Array || len(v.Elems) != len(chunk) {
				return badReply(s.Name(), v, "one element per id")
			}
			return fn(v)
		})
		if err != nil {
			return wrapErr(s.Name(), err)
		}
	}
	return nil
}

// DeadFilter selects the dead jobs [Queue.RequeueDead] requeues. Its zero
// value selects every dead job.
type DeadFilter struct {
	// ErrorPrefix selects the jobs whose last failure text (the row's
	// error field) starts with it, byte for byte; "" selects every job,
	// with an error or without.
	ErrorPrefix string
	// Since and Before bound the time of death, [Since, Before), as the
	// dead set's scores hold it: Unix ms on the server's clock, so skew
	// between this host and the server shifts the bounds. A zero time is
	// no bound; a time before 1970 is 1970, one past 2^53 ms (the year
	// 287,396) is 2^53 - 1 ms: the scores' range.
	Since, Before time.Time
	// Limit is the most jobs requeued; 0 is no limit.
	Limit int
}

// requeueScan is the most dead ids one dead_filter call examines: the
// bound on how long one call holds the server, however large the dead
// set.
const requeueScan = 1000

// RequeueDead requeues, as [Queue.Requeue] does, the dead jobs that f
// selects, in the dead set's order (oldest death first), and returns how
// many it requeued. It runs the dead_filter script (action requeue) repeatedly, each call
// examining at most 1,000 dead ids, so a huge dead set never blocks the
// server; each call is atomic and requeues a job only if it is still dead
// then (in dead, its row's state dead or the row gone: a row a peer left
// in another state is not made pending beside it); the whole is not: a job that dies while
// RequeueDead runs may or may not be requeued. When ctx ends, the jobs
// requeued so far stay requeued and their count is returned with the
// error.
func (q *Queue) RequeueDead(ctx context.Context, f DeadFilter) (int, error) {
	return q.deadPages(ctx, "requeue", f)
}

// deadPages runs dead_filter with action (requeue or delete) from the
// start of f's range, requeueScan ids examined per call, until the range
// or f.Limit is exhausted or ctx ends, and returns how many jobs it acted
// on.
func (q *Queue) deadPages(ctx context.Context, action string, f DeadFilter) (int, error) {
	if f.Limit < 0 {
		return 0, &ArgError{Arg: "Limit", Reason: "negative"}
	}
	since, before := int64(0), int64(maxScriptInt)
	if !f.Since.IsZero() {
		since = timeMillis(f.Since)
	}
	if !f.Before.IsZero() {
		before = timeMillis(f.Before)
	}
	total := 0
	var cur requeueCursor
	var a dispatch.Args
	for {
		limit := requeueScan
		if f.Limit > 0 {
			limit = min(limit, f.Limit-total)
		}
		if limit == 0 || since >= before {
			return total, nil
		}
		a.Reset()
		a.Key(q.keys.Dead)
		a.Key(q.keys.Pending)
		a.Key(q.keys.Base)
		a.Arg(action)
		a.ArgInt(since)
		a.ArgInt(before)
		a.Arg(f.ErrorPrefix)
		a.ArgInt(int64(limit))
		a.ArgInt(requeueScan)
		a.Arg(cur.id)
		a.ArgInt(cur.ms)
		var page requeuePage
		err := q.reaper.Eval(ctx, scriptDeadFilter, &a, page.read)
		if err != nil {
			return total, wrapErr("dead_filter", err)
		}
		total += page.moved
		if !page.more {
			return total, nil
		}
		cur = page.cursor
	}
}

// maxScriptInt is the largest integer a script takes as exact: 2^53 - 1.
const maxScriptInt = 1<<53 - 1

// ceilMillis returns t in Unix ms, rounded up: the first whole
// millisecond at or after t.
func ceilMillis(t time.Time) int64 {
	ms := t.UnixMilli()
	if time.UnixMilli(ms).Before(t) {
		ms++
	}
	return ms
}

// timeMillis is ceilMillis within a script's range, [0, maxScriptInt]: a
// time before 1970 is 0, one after the year 287,396 is maxScriptInt
// (both mean the same to the dead set's scores).
func timeMillis(t time.Time) int64 {
	switch {
	case t.Before(time.UnixMilli(0)):
		return 0
	case t.After(time.UnixMilli(maxScriptInt)):
		return maxScriptInt
	}
	return ceilMillis(t)
}

// requeueCursor is where the next dead_filter call starts: after id,
// which died at ms.
type requeueCursor struct {
	id string
	ms int64
}

// requeuePage is one dead_filter reply.
type requeuePage struct {
	moved  int
	cursor requeueCursor
	more   bool
}

// read parses {moved, examined, cursor_id, cursor_ms, more}.
func (p *requeuePage) read(v resp.Value) error {
	const name = "dead_filter"
	if v.Type != resp.Array || len(v.Elems) != 5 || !isString(v.Elems[2]) {
		return badReply(name, v, "{moved, examined, cursor_id, cursor_ms, more}")
	}
	var n [5]int64
	for _, i := range []int{0, 1, 3, 4} {
		x, err := v.Elems[i].AsInt()
		if err != nil || x < 0 {
			return badReply(name, v, "{moved, examined, cursor_id, cursor_ms, more} with counts >= 0")
		}
		n[i] = x
	}
	p.moved = int(n[0])
	p.cursor = requeueCursor{id: string(v.Elems[2].Str), ms: n[3]}
	p.more = n[4] == 1
	return nil
}
