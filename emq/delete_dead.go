package emq

import (
	"context"

	"github.com/echomq/echomq-go/dispatch"
	"github.com/echomq/echomq-go/resp"
)

// DeleteDead deletes the dead jobs that f selects (ids and rows), in the
// dead set's order (oldest death first), and returns how many it
// deleted. It runs the dead_filter script (action delete) repeatedly, each call
// examining at most 1,000 dead ids from a cursor, so a huge dead set
// never blocks the server; each call is atomic and deletes a job only if
// it is still dead then (in dead, its row's state dead or the row gone):
// a job requeued or run meanwhile is left alone. The whole is not
// atomic: a job that dies while DeleteDead runs may or may not be
// deleted. When ctx ends, the jobs deleted so far stay deleted and their
// count is returned with the error. f.Limit bounds the count (0: none).
//
// A dead job of a flow that is deleted before the flow is next read
// counts as completed for its dependents (see LANES-FLOWS.md).
func (q *Queue) DeleteDead(ctx context.Context, f DeadFilter) (int, error) {
	return q.deadPages(ctx, "delete", f)
}

// scriptPayloadHeads is the payload_heads read: its own block too.
var scriptPayloadHeads = dispatch.NewScript("payload_heads", source("payload_heads"))

// PayloadHead is the start of one job's payload, as [Queue.PayloadHeads]
// reads it.
type PayloadHead struct {
	Size int64  // the payload's length; -1 when the job has no payload (or no row)
	Head []byte // its first bytes; empty when Size exceeds the call's maxSize
}

// PayloadHeads reads the first n bytes (1 to 65,536) of each job's
// payload with the payload_heads script, one call per 1,000 ids (a read:
// it writes nothing): the header of a job system envelope, say, for a
// list of jobs, without moving their payloads. A payload longer than
// maxSize is not read (its Head is empty), so that a call never copies a
// huge payload on the server.
func (q *Queue) PayloadHeads(ctx context.Context, ids []string, n int, maxSize int64) ([]PayloadHead, error) {
	if n < 1 || n > 65536 {
		return nil, &ArgError{Arg: "n", Reason: "not in 1..65536"}
	}
	if maxSize < 0 {
		return nil, &ArgError{Arg: "maxSize", Reason: "negative"}
	}
	out := make([]PayloadHead, 0, len(ids))
	var a dispatch.Args
	for _, id := range ids {
		if err := checkID(id); err != nil {
			return nil, err
		}
	}
	for start := 0; start < len(ids); start += idChunk {
		chunk := ids[start:min(start+idChunk, len(ids))]
		a.Reset()
		a.Key(q.keys.Base)
		a.ArgInt(int64(n))
		a.ArgInt(min(maxSize, maxScriptInt))
		for _, id := range chunk {
			a.Arg(id)
		}
		err := q.reaper.Eval(ctx, scriptPayloadHeads, &a, func(v resp.Value) error {
			const want = "{size, head, ...}, one pair per id"
			if v.Type != resp.Array || len(v.Elems) != 2*len(chunk) {
				return badReply("payload_heads", v, want)
			}
			for i := 0; i < len(v.Elems); i += 2 {
				size, err := v.Elems[i].AsInt()
				if err != nil || !isString(v.Elems[i+1]) {
					return badReply("payload_heads", v, want)
				}
				out = append(out, PayloadHead{Size: size, Head: append([]byte(nil), v.Elems[i+1].Str...)})
			}
			return nil
		})
		if err != nil {
			return nil, wrapErr("payload_heads", err)
		}
	}
	return out, nil
}
