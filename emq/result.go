package emq

import (
	"context"
	"time"

	"github.com/echomq/echomq-go/dispatch"
	"github.com/echomq/echomq-go/resp"
)

// The job system's extension scripts (finish, cancel, worker_beat,
// workers): run as scripts, by EVALSHA, whatever the queue's executor, as
// the operations are.
var (
	scriptFinish     = dispatch.NewScript("finish", source("finish"))
	scriptCancel     = dispatch.NewScript("cancel", source("cancel"))
	scriptWorkerBeat = dispatch.NewScript("worker_beat", source("worker_beat"))
	scriptWorkers    = dispatch.NewScript("workers", source("workers"))
)

// FinishKind says how [Queue.Finish] ends a claimed job.
type FinishKind uint8

// The kinds of [Finish].
const (
	// FinishComplete completes the job as complete does, keeping the row
	// (state completed) and the result beside it for the retention.
	FinishComplete FinishKind = iota + 1
	// FinishDead ends the job in dead with an error text, as a retry
	// whose attempts are used up does.
	FinishDead
)

// Finish is one claimed job for [Queue.Finish] to end, named by its id
// and the token of its claim.
type Finish struct {
	Kind  FinishKind
	ID    string
	Token int64
	// Retention keeps a completed row and its result (at least a
	// millisecond; rounded up). For FinishDead it is ignored.
	Retention time.Duration
	// Data is the result of a completion, the error text of a death.
	Data []byte
}

// ResultKey returns the key of a job's result, emq:{q}:result:<id>.
func (k Keys) ResultKey(id string) string { return k.Base + "result:" + id }

// DoneChannel returns the channel on which the end of job id is
// published ("completed" or "dead"), emq:{q}:done:<id>.
func (k Keys) DoneChannel(id string) string { return k.Base + "done:" + id }

// CancelChannel returns the channel on which the ids of cancelled active
// jobs are published, emq:{q}:cancel.
func (k Keys) CancelChannel() string { return k.Base + "cancel" }

// Finish ends claimed jobs in one atomic call (the finish script): each
// completion exactly as complete does with the row kept, its result
// written at [Keys.ResultKey] with the same retention in the same step;
// each death as a final retry does. Each job that ends is announced on
// its [Keys.DoneChannel]. done[i] is false when fs[i]'s token no longer
// held the lease (nothing was written for it). Every id and duration is
// checked before anything is sent.
func (q *Queue) Finish(ctx context.Context, fs []Finish) (done []bool, err error) {
	var a dispatch.Args
	a.Key(q.keys.Active)
	a.Key(q.keys.Dead)
	a.Key(q.keys.Base)
	a.ArgInt(int64(len(fs)))
	for i := range fs {
		f := &fs[i]
		if err := checkID(f.ID); err != nil {
			return nil, err
		}
		keep := int64(1)
		switch f.Kind {
		case FinishComplete:
			if keep, err = millis("retention", f.Retention, false); err != nil {
				return nil, err
			}
			keep = max(keep, 1)
		case FinishDead:
		default:
			return nil, &ArgError{Arg: "Finish.Kind", Reason: "not a kind of finish"}
		}
		a.Arg(f.ID)
		a.ArgInt(f.Token)
		if f.Kind == FinishComplete {
			a.Arg("c")
		} else {
			a.Arg("d")
		}
		a.ArgInt(keep)
		a.ArgBytes(f.Data)
	}
	done = make([]bool, 0, len(fs))
	err = q.reaper.Eval(ctx, scriptFinish, &a, func(v resp.Value) error {
		if v.Type != resp.Array || len(v.Elems) != len(fs) {
			return badReply("finish", v, "one result per job")
		}
		for _, e := range v.Elems {
			n, err := e.AsInt()
			if err != nil || n < 0 || n > 1 {
				return badReply("finish", v, "an array of 0 and 1")
			}
			done = append(done, n == 1)
		}
		return nil
	})
	if err != nil {
		return nil, wrapErr("finish", err)
	}
	return done, nil
}

// Result returns the result a job's completion kept ([Queue.Finish]);
// ok is false when there is none (never kept, or its retention passed).
func (q *Queue) Result(ctx context.Context, id string) (result []byte, ok bool, err error) {
	if err := checkID(id); err != nil {
		return nil, false, err
	}
	v, err := q.sender.Do(ctx, "GET", q.keys.ResultKey(id))
	if err != nil {
		return nil, false, err
	}
	if v.IsNull() {
		return nil, false, nil
	}
	return append([]byte(nil), v.Str...), true, nil
}

// JobRow is a job's row as [Queue.Row] reads it.
type JobRow struct {
	State    State
	Attempts int64
	Payload  []byte
	Error    string
}

// Row reads a job's row (HMGET state, attempts, payload, error): ok is
// false when it has none (never enqueued, deleted, or completed without
// retention).
func (q *Queue) Row(ctx context.Context, id string) (r JobRow, ok bool, err error) {
	if err := checkID(id); err != nil {
		return r, false, err
	}
	v, err := q.sender.Do(ctx, "HMGET", q.keys.Job(id), "state", "attempts", "payload", "error")
	if err != nil {
		return r, false, err
	}
	if v.Type != resp.Array || len(v.Elems) != 4 {
		return r, false, badReply("HMGET", v, "4 fields")
	}
	if v.Elems[0].IsNull() {
		return r, false, nil
	}
	r.State = State(v.Elems[0].Str)
	r.Attempts, _ = v.Elems[1].AsInt()
	r.Payload = append([]byte(nil), v.Elems[2].Str...)
	r.Error = string(v.Elems[3].Str)
	return r, true, nil
}
