package emq

import (
	"context"
	"strconv"
	"time"

	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/resp"
)

// State is a job's state: the row's state field, and for all but
// completed the set that holds its id.
type State string

// The states of the wire, byte for byte the row's state values.
const (
	StatePending   State = "pending"
	StateActive    State = "active"
	StateDelayed   State = "delayed"
	StateDead      State = "dead"
	StateCompleted State = "completed" // a row kept after complete; in no set
)

// setKey returns the key of the set holding ids in state s.
func (q *Queue) setKey(s State) (string, error) {
	switch s {
	case StatePending:
		return q.keys.Pending, nil
	case StateActive:
		return q.keys.Active, nil
	case StateDelayed:
		return q.keys.Delayed, nil
	case StateDead:
		return q.keys.Dead, nil
	}
	return "", &ArgError{Arg: "state", Reason: strconv.Quote(string(s)) + " has no set: want pending, active, delayed or dead"}
}

// JobInfo is one entry of a [Queue.Browse] page: an id, its score in the
// set, and its row as read.
type JobInfo struct {
	ID string // the id, as the set holds it
	// Score is the id's score: 0 in pending; in active the lease deadline,
	// in delayed the due time, in dead the time of death, in Unix ms on the
	// server's clock.
	Score int64
	// Exists is false for a ghost, an id whose row is gone; the fields
	// below are then empty.
	Exists   bool
	State    State  // the row's state
	Attempts int64  // the row's attempts
	Payload  []byte // the row's payload
	Error    string // the row's error: the last failure's text, if any
	// Extra holds the row's other fields (a native executor's lease_epoch
	// and failures), or nil.
	Extra map[string]string
}

// Time returns the Score as a time, or the zero time for a score of 0.
func (j JobInfo) Time() time.Time {
	if j.Score == 0 {
		return time.Time{}
	}
	return time.UnixMilli(j.Score)
}

// Browse reads a page of the set of jobs in state set (pending, active,
// delayed or dead): up to count ids from offset on, in the set's order
// (pending in mint order, the others by score), each with its row. These
// are plain reads, no script: one ZRANGE, then every HGETALL in one
// pipeline. A job may move between the two reads; its row then shows its
// new state.
func (q *Queue) Browse(ctx context.Context, set State, offset, count int) ([]JobInfo, error) {
	key, err := q.setKey(set)
	if err != nil {
		return nil, err
	}
	if offset < 0 {
		return nil, &ArgError{Arg: "offset", Reason: "negative"}
	}
	if count <= 0 {
		return nil, nil
	}
	var page []JobInfo
	var buf [128]byte
	cmd := resp.Command(buf[:0], "ZRANGE", key, strconv.Itoa(offset), strconv.Itoa(offset+count-1), "WITHSCORES")
	err = wire.DoFunc(ctx, q.sender, cmd, func(v resp.Value) (err error) {
		page, err = parseScored(v)
		return err
	})
	if err != nil || len(page) == 0 {
		return nil, err
	}
	var b pipeline.Batch
	for _, j := range page {
		b.Add("HGETALL", q.keys.Job(j.ID))
	}
	if err := b.Exec(ctx, q.sender); err != nil {
		return nil, err
	}
	for i := range page {
		v := b.Reply(i)
		if err := v.Err(); err != nil {
			return nil, err
		}
		if err := fillRow(&page[i], v); err != nil {
			return nil, err
		}
	}
	return page, nil
}

// parseScored reads ZRANGE ... WITHSCORES: a flat {member, score, ...}
// under RESP2, {{member, score}, ...} under RESP3.
func parseScored(v resp.Value) ([]JobInfo, error) {
	if v.Type != resp.Array {
		return nil, badReply("ZRANGE", v, "an array")
	}
	var out []JobInfo
	add := func(m, s resp.Value) error {
		if !isString(m) {
			return badReply("ZRANGE", v, "string members")
		}
		var f float64
		switch s.Type {
		case resp.Double, resp.Integer:
			f = s.Float()
		case resp.BulkString, resp.SimpleString:
			var err error
			if f, err = strconv.ParseFloat(string(s.Str), 64); err != nil {
				return badReply("ZRANGE", v, "numeric scores")
			}
		default:
			return badReply("ZRANGE", v, "numeric scores")
		}
		out = append(out, JobInfo{ID: string(m.Str), Score: int64(f)})
		return nil
	}
	if len(v.Elems) > 0 && v.Elems[0].Type == resp.Array {
		for _, p := range v.Elems {
			if p.Type != resp.Array || len(p.Elems) != 2 {
				return nil, badReply("ZRANGE", v, "{member, score} pairs")
			}
			if err := add(p.Elems[0], p.Elems[1]); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	if len(v.Elems)%2 != 0 {
		return nil, badReply("ZRANGE", v, "member, score pairs")
	}
	for i := 0; i < len(v.Elems); i += 2 {
		if err := add(v.Elems[i], v.Elems[i+1]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// fillRow copies an HGETALL reply (a map under RESP3, a flat array under
// RESP2; empty for a missing row) into j.
func fillRow(j *JobInfo, v resp.Value) error {
	if v.Type != resp.Map && v.Type != resp.Array || len(v.Elems)%2 != 0 {
		return badReply("HGETALL", v, "a map")
	}
	j.Exists = len(v.Elems) > 0
	for i := 0; i < len(v.Elems); i += 2 {
		f, val := v.Elems[i], v.Elems[i+1]
		switch string(f.Str) {
		case "state":
			j.State = State(val.Str)
		case "attempts":
			n, err := val.AsInt()
			if err != nil {
				return badReply("HGETALL", v, "a decimal attempts")
			}
			j.Attempts = n
		case "payload":
			j.Payload = append([]byte{}, val.Str...)
		case "error":
			j.Error = string(val.Str)
		default:
			if j.Extra == nil {
				j.Extra = make(map[string]string)
			}
			j.Extra[string(f.Str)] = string(val.Str)
		}
	}
	return nil
}

// Count returns how many ids the set of jobs in state set holds (ZCARD).
func (q *Queue) Count(ctx context.Context, set State) (int64, error) {
	key, err := q.setKey(set)
	if err != nil {
		return 0, err
	}
	var buf [128]byte
	return q.sender.DoInt(ctx, resp.Command(buf[:0], "ZCARD", key))
}

// PendingSize returns how many ids wait in pending (ZCARD).
func (q *Queue) PendingSize(ctx context.Context) (int64, error) {
	return q.Count(ctx, StatePending)
}

// Pause sets the queue's paused flag (HSET meta paused 1): claims answer
// empty until Resume. Jobs already claimed run on.
func (q *Queue) Pause(ctx context.Context) error {
	var buf [128]byte
	_, err := q.sender.DoInt(ctx, resp.Command(buf[:0], "HSET", q.keys.Meta, "paused", "1"))
	return err
}

// Resume clears the queue's paused flag (HDEL meta paused).
func (q *Queue) Resume(ctx context.Context) error {
	var buf [128]byte
	_, err := q.sender.DoInt(ctx, resp.Command(buf[:0], "HDEL", q.keys.Meta, "paused"))
	return err
}

// Paused reports whether the queue's paused flag is set.
func (q *Queue) Paused(ctx context.Context) (bool, error) {
	var buf [128]byte
	var paused bool
	err := wire.DoFunc(ctx, q.sender, resp.Command(buf[:0], "HGET", q.keys.Meta, "paused"), func(v resp.Value) error {
		paused = v.Equal("1")
		return nil
	})
	return paused, err
}
