package emq

import (
	"context"
	"strings"
	"time"

	"github.com/echomq/echomq-go/resp"
)

// Enqueue admits a job with a freshly minted id into pending and returns
// the id. The row is {state pending, attempts 0, payload}. A minted id that
// already names a row (two generators on one node) is [ErrDuplicate].
//
// Enqueue allocates the id string and nothing else in steady state.
func (q *Queue) Enqueue(ctx context.Context, payload []byte) (string, error) {
	id := q.ids.Next()
	ok, err := q.enqueue(ctx, id, payload)
	switch {
	case err != nil:
		return "", err
	case !ok:
		return "", ErrDuplicate
	}
	return id, nil
}

// EnqueueID admits a job under a caller-chosen id. It reports false when a
// row with that id already exists (a duplicate: nothing is written). An id
// that is not a branded id is an *[IDError] (matching [ErrInvalidID]) and
// nothing is sent; a well-formed id outside the JOB namespace is refused by
// the server with "EMQKIND job id must be JOB-namespaced", a *[ScriptError]
// matching [ErrKind].
func (q *Queue) EnqueueID(ctx context.Context, id string, payload []byte) (bool, error) {
	if err := checkID(id); err != nil {
		return false, err
	}
	return q.enqueue(ctx, id, payload)
}

// enqueue runs the enqueue script for an id already checked.
func (q *Queue) enqueue(ctx context.Context, id string, payload []byte) (bool, error) {
	o := getOp("enqueue")
	o.key = q.keys.AppendJob(o.key[:0], id)
	o.args.KeyBytes(o.key)
	o.args.Key(q.keys.Pending)
	o.args.Arg(id)
	o.args.ArgBytes(payload)
	n, err := q.evalInt(ctx, scriptEnqueue, o)
	putOp(o, err)
	if err != nil {
		return false, err
	}
	return n == 1, nil
}

// EnqueueIn admits a job with a freshly minted id into delayed, due after
// delay on the server's clock (a delay of 0 or less is due at once, and
// waits for the next promote). The row is {state delayed, attempts 0,
// payload}.
func (q *Queue) EnqueueIn(ctx context.Context, delay time.Duration, payload []byte) (string, error) {
	id := q.ids.Next()
	ok, err := q.enqueueIn(ctx, id, delay, payload)
	switch {
	case err != nil:
		return "", err
	case !ok:
		return "", ErrDuplicate
	}
	return id, nil
}

// EnqueueAt admits a job due at t. The delay is t less the local clock's
// now; the due time itself is reckoned on the server's clock, so clock skew
// between this host and the server shifts it.
func (q *Queue) EnqueueAt(ctx context.Context, t time.Time, payload []byte) (string, error) {
	return q.EnqueueIn(ctx, time.Until(t), payload)
}

// EnqueueIDIn is [Queue.EnqueueIn] under a caller-chosen id, with the
// duplicate and id rules of [Queue.EnqueueID].
func (q *Queue) EnqueueIDIn(ctx context.Context, id string, delay time.Duration, payload []byte) (bool, error) {
	if err := checkID(id); err != nil {
		return false, err
	}
	return q.enqueueIn(ctx, id, delay, payload)
}

func (q *Queue) enqueueIn(ctx context.Context, id string, delay time.Duration, payload []byte) (bool, error) {
	ms, _ := millis("delay", delay, true)
	o := getOp("enqueue_at")
	o.key = q.keys.AppendJob(o.key[:0], id)
	o.args.KeyBytes(o.key)
	o.args.Key(q.keys.Delayed)
	o.args.Arg(id)
	o.args.ArgBytes(payload)
	o.args.ArgInt(ms)
	n, err := q.evalInt(ctx, scriptEnqueueAt, o)
	putOp(o, err)
	if err != nil {
		return false, err
	}
	return n == 1, nil
}

// EnqueueResult is the outcome of one job of [Queue.EnqueueBatch].
type EnqueueResult struct {
	ID  string // the minted id
	Err error  // nil when enqueued; ErrDuplicate, or a *ScriptError
}

// EnqueueBatch enqueues one job per payload, minting their ids, in one
// pipeline of enqueue transitions ([dispatch.Executor.EvalBatch]): each job
// is its own atomic transition, and results[i] is payloads[i]'s. The error
// is for the exchange as a whole (a broken connection, ctx's end); then
// some jobs may have been enqueued and the results are nil.
func (q *Queue) EnqueueBatch(ctx context.Context, payloads [][]byte) ([]EnqueueResult, error) {
	if len(payloads) == 0 {
		return nil, nil
	}
	ids := q.mintIDs(len(payloads))
	o := getOp("enqueue")
	for i, p := range payloads {
		id := ids[i*IDLen : (i+1)*IDLen]
		o.args.Reset()
		o.key = q.keys.AppendJob(o.key[:0], id)
		o.args.KeyBytes(o.key)
		o.args.Key(q.keys.Pending)
		o.args.Arg(id)
		o.args.ArgBytes(p)
		o.batch.Add(scriptEnqueue, &o.args)
	}
	err := q.exec.EvalBatch(ctx, &o.batch)
	if err != nil {
		putOp(o, err)
		return nil, err
	}
	defer putBig(o, payloads)
	results := make([]EnqueueResult, len(payloads))
	for i := range results {
		results[i].ID = ids[i*IDLen : (i+1)*IDLen]
		if err := o.batch.Err(i); err != nil {
			results[i].Err = wrapErr("enqueue", err)
			continue
		}
		switch n, err := o.batch.Reply(i).AsInt(); {
		case err != nil:
			results[i].Err = badReply("enqueue", o.batch.Reply(i), "an integer")
		case n != 1:
			results[i].Err = ErrDuplicate
		}
	}
	return results, nil
}

// bulkChunk is the most jobs one enqueue_batch transition carries.
const bulkChunk = 1000

// EnqueueBulk enqueues one job per payload, minting their ids, like
// [Queue.EnqueueBatch], but with the enqueue_batch transition: up to 1,000
// jobs per script call (each call atomic, all calls in one pipeline),
// which costs the server a fraction of one enqueue per job. results[i] is
// payloads[i]'s. The error is for the exchange as a whole.
//
// A call is one round trip. A producer calling EnqueueBulk from one
// goroutine waits for each reply before it sends its next batch, and
// while a worker's round holds the server that wait is most of its time;
// two goroutines calling it on one Queue keep a batch on the wire while
// the other's reply comes back (the connection pipelines them), each call
// still with its own ids and results (emqbench e2e -inflight 2).
func (q *Queue) EnqueueBulk(ctx context.Context, payloads [][]byte) ([]EnqueueResult, error) {
	if len(payloads) == 0 {
		return nil, nil
	}
	ids := q.mintIDs(len(payloads))
	o := getOp("enqueue_batch")
	for start := 0; start < len(payloads); start += bulkChunk {
		o.args.Reset()
		o.args.Key(q.keys.Pending)
		o.args.Key(q.keys.Base)
		for i := start; i < min(start+bulkChunk, len(payloads)); i++ {
			o.args.Arg(ids[i*IDLen : (i+1)*IDLen])
			o.args.ArgBytes(payloads[i])
		}
		o.batch.Add(scriptEnqueueBatch, &o.args)
	}
	err := q.ext.EvalBatch(ctx, &o.batch)
	if err != nil {
		putOp(o, err)
		return nil, err
	}
	defer putBig(o, payloads)
	results := make([]EnqueueResult, len(payloads))
	for i := range results {
		results[i].ID = ids[i*IDLen : (i+1)*IDLen]
	}
	for c := range o.batch.Len() {
		start := c * bulkChunk
		part := results[start:min(start+bulkChunk, len(results))]
		v := o.batch.Reply(c)
		if err := o.batch.Err(c); err != nil {
			for i := range part {
				part[i].Err = wrapErr("enqueue_batch", err)
			}
			continue
		}
		if v.Type != resp.Array || len(v.Elems) != len(part) {
			return nil, badReply("enqueue_batch", v, "one integer per job")
		}
		for i, e := range v.Elems {
			if n, err := e.AsInt(); err != nil || n != 1 {
				part[i].Err = ErrDuplicate
			}
		}
	}
	return results, nil
}

// putBig recycles o unless it carried more than 1 MiB of payloads, which
// its buffers would otherwise keep alive in the pool.
func putBig(o *op, payloads [][]byte) {
	size := 0
	for _, p := range payloads {
		size += len(p)
	}
	if size <= 1<<20 {
		putOp(o, nil)
	}
}

// mintIDs mints n ids into one string, id i at [i*IDLen, (i+1)*IDLen): one
// allocation for the lot, and one clock read per run of up to mintRun ids
// (IDGenerator.appendRun) rather than one per id.
func (q *Queue) mintIDs(n int) string {
	var b strings.Builder
	b.Grow(n * IDLen)
	var buf [mintRun * IDLen]byte
	for left := n; left > 0; {
		run, k := q.ids.appendRun(buf[:0], min(left, mintRun))
		b.Write(run)
		left -= k
	}
	return b.String()
}

// mintRun is the most ids mintIDs mints with one clock read.
const mintRun = 32
