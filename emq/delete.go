package emq

import (
	"context"
	"errors"

	"github.com/echomq/echomq-go/resp"
)

// ErrNotFound is returned by [Queue.Delete] for an id that names no job:
// no set holds it and it has no row. Nothing was written.
var ErrNotFound = errors.New("emq: no such job")

// Delete removes a job whatever its state, atomically (the delete
// script): its id leaves the set that holds it and its row is deleted.
// It returns the state the job was in: the set that held it, or
// StateCompleted for a completed row kept for retention. An id that
// names no job is [ErrNotFound].
//
// A worker running a deleted job finds its lease lost: its complete or
// retry answers stale, and its next extend cancels the handler's context
// with [ErrLeaseLost]. As with a completed job whose row is gone, the id
// may be enqueued again with [Queue.EnqueueID]; it then starts again at
// attempts 0.
func (q *Queue) Delete(ctx context.Context, id string) (State, error) {
	was, err := q.DeleteBatch(ctx, []string{id})
	if err != nil {
		return "", err
	}
	if was[0] == "" {
		return "", ErrNotFound
	}
	return was[0], nil
}

// DeleteBatch deletes each job of ids as [Queue.Delete] does, 1,000 ids
// per atomic call: was[i] is the state ids[i] was in, or "" when it named
// no job. Every id is checked before anything is sent.
func (q *Queue) DeleteBatch(ctx context.Context, ids []string) (was []State, err error) {
	keys := []string{q.keys.Pending, q.keys.Active, q.keys.Delayed, q.keys.Dead, q.keys.Base}
	err = q.eachChunk(ctx, ids, scriptDelete, keys, func(v resp.Value) error {
		for _, e := range v.Elems {
			if !isString(e) {
				return badReply("delete", v, "an array of states")
			}
			was = append(was, State(e.Str))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return was, nil
}
