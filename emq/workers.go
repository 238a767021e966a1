package emq

import (
	"context"
	"time"

	"github.com/echomq/echomq-go/dispatch"
	"github.com/echomq/echomq-go/resp"
)

// WorkersKey returns the key of a queue's registry of workers,
// emq:{q}:workers: a zset of worker ids scored by last heartbeat (ms,
// server clock), beside a hash emq:{q}:worker:<wid> per worker.
func (k Keys) WorkersKey() string { return k.Base + "workers" }

// Heartbeat registers (or refreshes) worker wid in the queue's registry
// with fields (name, value pairs), and the field heartbeat set to the
// server's time, which it returns; the entry lives ttl (at least a
// millisecond) unless refreshed. A ttl of 0 removes the entry: the worker
// leaves.
func (q *Queue) Heartbeat(ctx context.Context, wid string, ttl time.Duration, fields ...string) (time.Time, error) {
	ms, err := millis("ttl", ttl, false)
	if err != nil {
		return time.Time{}, err
	}
	if len(fields)%2 != 0 {
		return time.Time{}, &ArgError{Arg: "fields", Reason: "not name, value pairs"}
	}
	var a dispatch.Args
	a.Key(q.keys.WorkersKey())
	a.Key(q.keys.Base)
	a.Arg(wid)
	a.ArgInt(ms)
	for _, f := range fields {
		a.Arg(f)
	}
	var now int64
	err = q.reaper.Eval(ctx, scriptWorkerBeat, &a, func(v resp.Value) error {
		n, err := v.AsInt()
		if err != nil {
			return badReply("worker_beat", v, "an integer")
		}
		now = n
		return nil
	})
	if err != nil {
		return time.Time{}, wrapErr("worker_beat", err)
	}
	return time.UnixMilli(now), nil
}

// WorkerEntry is one live worker of a queue's registry: its id and the
// fields of its hash.
type WorkerEntry struct {
	ID     string
	Fields map[string]string
}

// Workers lists up to limit live workers of the queue, newest heartbeat
// first, pruning the entries whose hash expired (a missed heartbeat).
func (q *Queue) Workers(ctx context.Context, limit int) ([]WorkerEntry, error) {
	if limit < 1 {
		return nil, &ArgError{Arg: "limit", Reason: "below 1"}
	}
	var a dispatch.Args
	a.Key(q.keys.WorkersKey())
	a.Key(q.keys.Base)
	a.ArgInt(scriptInt(limit))
	var out []WorkerEntry
	err := q.reaper.Eval(ctx, scriptWorkers, &a, func(v resp.Value) error {
		if v.Type != resp.Array || len(v.Elems)%2 != 0 {
			return badReply("workers", v, "{wid, {field, value, ...}, ...}")
		}
		for i := 0; i < len(v.Elems); i += 2 {
			h := v.Elems[i+1]
			if !isString(v.Elems[i]) || !h.IsAggregate() || len(h.Elems)%2 != 0 {
				return badReply("workers", v, "{wid, {field, value, ...}, ...}")
			}
			e := WorkerEntry{ID: string(v.Elems[i].Str), Fields: make(map[string]string, len(h.Elems)/2)}
			for j := 0; j < len(h.Elems); j += 2 {
				e.Fields[string(h.Elems[j].Str)] = string(h.Elems[j+1].Str)
			}
			out = append(out, e)
		}
		return nil
	})
	if err != nil {
		return nil, wrapErr("workers", err)
	}
	return out, nil
}
