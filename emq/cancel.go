package emq

import (
	"context"
	"errors"

	"github.com/echomq/echomq-go/dispatch"
	"github.com/echomq/echomq-go/resp"
)

// ErrFinished is returned by [Queue.Cancel] for a job that has already
// ended (completed, or dead): nothing was written.
var ErrFinished = errors.New("emq: the job has finished")

// Cancel ends a job that has not finished as dead with the error text
// reason, in one atomic step (the cancel script), and returns the state
// it was in: [StatePending], [StateDelayed] or [StateActive]. An active
// job's id is published on [Keys.CancelChannel], so that the consumer
// running it can end its handler; its token no longer holds in any case
// (complete, retry and extend answer stale), so a consumer that never
// hears of it loses the job to its lease. Every cancelled job's end is
// published on its [Keys.DoneChannel].
//
// A job that has completed or died is [ErrFinished], an id that names no
// job [ErrNotFound]; nothing changes.
func (q *Queue) Cancel(ctx context.Context, id, reason string) (State, error) {
	if err := checkID(id); err != nil {
		return "", err
	}
	var a dispatch.Args
	a.Key(q.keys.Pending)
	a.Key(q.keys.Delayed)
	a.Key(q.keys.Active)
	a.Key(q.keys.Dead)
	a.Key(q.keys.Base)
	a.Arg(id)
	a.Arg(reason)
	var was State
	err := q.reaper.Eval(ctx, scriptCancel, &a, func(v resp.Value) error {
		if !isString(v) {
			return badReply("cancel", v, "a state")
		}
		was = State(v.Str)
		return nil
	})
	if err != nil {
		return "", wrapErr("cancel", err)
	}
	switch was {
	case StatePending, StateDelayed, StateActive:
		return was, nil
	case "":
		return "", ErrNotFound
	}
	return was, ErrFinished
}
