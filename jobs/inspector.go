package jobs

import (
	"context"
	"strconv"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/emq"
)

// Inspector is the operator's face of the job system: every method is a
// thin wrapper over one emq operation of one queue.
type Inspector struct {
	qs queues
}

// NewInspector returns an Inspector sending through s; opts are passed to
// emq.Open for each queue.
func NewInspector(s conn.Sender, opts ...emq.Option) *Inspector {
	return &Inspector{qs: queues{s: s, opts: opts}}
}

// Stats returns a queue's counts, read atomically (emq's stats).
func (in *Inspector) Stats(ctx context.Context, queue string) (emq.QueueStats, error) {
	q, err := in.qs.get(ctx, queue)
	if err != nil {
		return emq.QueueStats{}, err
	}
	return q.Stats(ctx)
}

// TaskInfo is one job of a Browse page: emq's JobInfo and its envelope
// read (Type "" and Raw true for a job without one; Malformed set for an
// envelope that does not parse).
type TaskInfo struct {
	emq.JobInfo
	Type      string
	Body      []byte
	Raw       bool
	Malformed error
}

// Browse returns a page of a queue's set (pending, active, delayed,
// dead), each job with its task's type and body.
func (in *Inspector) Browse(ctx context.Context, queue string, set emq.State, offset, count int) ([]TaskInfo, error) {
	q, err := in.qs.get(ctx, queue)
	if err != nil {
		return nil, err
	}
	page, err := q.Browse(ctx, set, offset, count)
	if err != nil {
		return nil, err
	}
	out := make([]TaskInfo, len(page))
	for i, j := range page {
		out[i].JobInfo = j
		switch e, err := ParseEnvelope(j.Payload); {
		case !IsEnveloped(j.Payload):
			out[i].Raw, out[i].Body = true, j.Payload
		case err != nil:
			out[i].Malformed = err
		default:
			out[i].Type, out[i].Body = string(e.Type), e.Body
		}
	}
	return out, nil
}

// Requeue moves a dead job back to pending (emq.ErrNotDead otherwise).
func (in *Inspector) Requeue(ctx context.Context, queue, id string) error {
	q, err := in.qs.get(ctx, queue)
	if err != nil {
		return err
	}
	return q.Requeue(ctx, id)
}

// Delete removes a job in any state, with its row, and returns the state
// it was in.
func (in *Inspector) Delete(ctx context.Context, queue, id string) (emq.State, error) {
	q, err := in.qs.get(ctx, queue)
	if err != nil {
		return "", err
	}
	return q.Delete(ctx, id)
}

// Pause stops every consumer of a queue from claiming (atomically, in
// the claim scripts); Resume lets them claim again.
func (in *Inspector) Pause(ctx context.Context, queue string) error {
	q, err := in.qs.get(ctx, queue)
	if err != nil {
		return err
	}
	return q.Pause(ctx)
}

// Resume undoes Pause.
func (in *Inspector) Resume(ctx context.Context, queue string) error {
	q, err := in.qs.get(ctx, queue)
	if err != nil {
		return err
	}
	return q.Resume(ctx)
}

// Cancel is [Client.Cancel].
func (in *Inspector) Cancel(ctx context.Context, queue, id string) (emq.State, error) {
	q, err := in.qs.get(ctx, queue)
	if err != nil {
		return "", err
	}
	return q.Cancel(ctx, id, CancelReason)
}

// WorkerInfo is one live consumer of a queue, from its registry entry.
type WorkerInfo struct {
	ID          string
	Host        string
	PID         int
	Queues      string // name=weight, comma-separated
	Concurrency int
	Started     time.Time
	Heartbeat   time.Time // the last, on the server's clock
	Fields      map[string]string
}

// Workers lists the live consumers of a queue (at most 1,000), newest
// heartbeat first; an entry whose heartbeat was missed is pruned.
func (in *Inspector) Workers(ctx context.Context, queue string) ([]WorkerInfo, error) {
	q, err := in.qs.get(ctx, queue)
	if err != nil {
		return nil, err
	}
	es, err := q.Workers(ctx, 1000)
	if err != nil {
		return nil, err
	}
	out := make([]WorkerInfo, len(es))
	for i, e := range es {
		f := e.Fields
		w := WorkerInfo{ID: e.ID, Host: f["host"], Queues: f["queues"], Fields: f}
		w.PID, _ = strconv.Atoi(f["pid"])
		w.Concurrency, _ = strconv.Atoi(f["concurrency"])
		if ms, err := strconv.ParseInt(f["started"], 10, 64); err == nil {
			w.Started = time.UnixMilli(ms)
		}
		if ms, err := strconv.ParseInt(f["heartbeat"], 10, 64); err == nil {
			w.Heartbeat = time.UnixMilli(ms)
		}
		out[i] = w
	}
	return out, nil
}
