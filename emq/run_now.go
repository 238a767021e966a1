package emq

import (
	"context"
	"errors"

	"github.com/echomq/echomq-go/resp"
)

// ErrNotDelayed is returned by [Queue.RunNow] for an id that is not in
// the delayed set: it is in another state, or names no job. Nothing was
// written.
var ErrNotDelayed = errors.New("emq: the job is not delayed")

// RunNow moves a delayed job to pending before its due time (the run_now
// script), as promote moves a due one: its row gets state pending and
// keeps its attempts and error, and it is claimed in id order with the
// rest. An id not in delayed is [ErrNotDelayed].
func (q *Queue) RunNow(ctx context.Context, id string) error {
	done, err := q.RunNowBatch(ctx, []string{id})
	if err == nil && !done[0] {
		err = ErrNotDelayed
	}
	return err
}

// RunNowBatch moves each delayed job of ids to pending as [Queue.RunNow]
// does, 1,000 ids per atomic call: done[i] is true when ids[i] was
// delayed and is now pending, false when it was not delayed. Every id is
// checked before anything is sent.
func (q *Queue) RunNowBatch(ctx context.Context, ids []string) (done []bool, err error) {
	err = q.eachChunk(ctx, ids, scriptRunNow, []string{q.keys.Delayed, q.keys.Pending, q.keys.Base}, func(v resp.Value) error {
		for _, e := range v.Elems {
			n, err := e.AsInt()
			if err != nil || n < 0 || n > 1 {
				return badReply("run_now", v, "an array of 0 and 1")
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
