package emq

import (
	"context"
	"time"

	"github.com/echomq/echomq-go/dispatch"
	"github.com/echomq/echomq-go/resp"
)

// QueueStats is a queue's state at one instant, read atomically on the
// server (the stats script) by [Queue.Stats].
type QueueStats struct {
	// Time is the server's clock when the counts were read.
	Time time.Time
	// The ids each set holds.
	Pending, Active, Delayed, Dead int64
	// Due counts the delayed jobs whose due time has come: promote would
	// move them to pending now.
	Due int64
	// Expired counts the active jobs whose lease has run out: reap would
	// take them back now.
	Expired int64
	// Paused is the queue's paused flag.
	Paused bool
	// Oldest is the pending job claimed next (the smallest id), or ""
	// when pending is empty.
	Oldest string
	// Lag is the age of Oldest: Time less the mint time its id carries
	// (see [SnowflakeTime]), 0 when pending is empty or the id is not a
	// branded id. A job counts from when its id was minted, so a retried
	// job, or a delayed one that became due, shows the age of its first
	// enqueue; a mint clock ahead of the server's shows as no lag.
	Lag time.Duration
}

// Stats reads the queue's counts, the delayed jobs due now, the expired
// leases, the paused flag and the lag, in one atomic read-only script on
// the server's clock.
func (q *Queue) Stats(ctx context.Context) (QueueStats, error) {
	var a dispatch.Args
	a.Key(q.keys.Pending)
	a.Key(q.keys.Active)
	a.Key(q.keys.Delayed)
	a.Key(q.keys.Dead)
	a.Key(q.keys.Base)
	var st QueueStats
	err := q.reaper.Eval(ctx, scriptStats, &a, st.read)
	if err != nil {
		return QueueStats{}, wrapErr("stats", err)
	}
	return st, nil
}

// read parses {now_ms, pending, active, delayed, dead, due, expired,
// paused, oldest}.
func (st *QueueStats) read(v resp.Value) error {
	const want = "{now_ms, pending, active, delayed, dead, due, expired, paused, oldest}"
	if v.Type != resp.Array || len(v.Elems) != 9 || !isString(v.Elems[8]) {
		return badReply("stats", v, want)
	}
	var n [8]int64
	for i := range n {
		x, err := v.Elems[i].AsInt()
		if err != nil || x < 0 {
			return badReply("stats", v, want)
		}
		n[i] = x
	}
	st.Time = time.UnixMilli(n[0])
	st.Pending, st.Active, st.Delayed, st.Dead = n[1], n[2], n[3], n[4]
	st.Due, st.Expired, st.Paused = n[5], n[6], n[7] == 1
	st.Oldest = string(v.Elems[8].Str)
	if _, sf, err := ParseID(st.Oldest); err == nil {
		st.Lag = max(st.Time.Sub(SnowflakeTime(sf)), 0)
	}
	return nil
}
