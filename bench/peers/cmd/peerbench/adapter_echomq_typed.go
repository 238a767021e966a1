package main

import (
	"context"
	"errors"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/kv"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/resp"
)

// The echomq-typed client: the echomq runner (adapter_echomq.go: the
// same connection, subscriber, loops and pools) on the paths the README
// teaches, for typed ÷ raw in one run. Every command is built with a
// cmds.Builder inside the timed loop (the parity rule) and read by the
// decoder cmds names for its reply: at depth 1 and per goroutine one
// kv.Call (kv.CallNull for GET) with the scratch's own Builder; at depth
// N one reused pipeline.Batch, its own Builder (Batch.Builder) and a
// typed handle per command (Batch.OK, Batch.Int, Batch.String,
// Batch.Status for PING), each handle's Value checked after Exec.
// EVALSHA is plain EVALSHA (prepare loaded the script), where the raw
// client goes through dispatch's NOSCRIPT-safe Scripted.

func newEchomqTyped(cfg config) (runner, error) {
	r, err := newEchomq(cfg)
	if err != nil {
		return nil, err
	}
	r.(*echomqRunner).typed = true
	return r, nil
}

// handles are the typed handles of one depth-N batch, by reply type; a
// workload uses one of them. Reused across batches: no allocation in
// steady state.
type handles struct {
	status []pipeline.Reply[string]     // PING
	oks    []pipeline.Reply[bool]       // SET
	ints   []pipeline.Reply[int64]      // EVALSHA, PUBLISH
	nulls  []pipeline.NullReply[string] // GET
}

func (h *handles) reset() {
	h.status, h.oks, h.ints, h.nulls = h.status[:0], h.oks[:0], h.ints[:0], h.nulls[:0]
}

// batchTyped runs ops [first, first+k) of w as one typed batch.
func (r *echomqRunner) batchTyped(ctx context.Context, w *workload, first uint64, k int) error {
	b, h := &r.batch, &r.h
	b.Reset()
	h.reset()
	pb := b.Builder()
	for i := range k {
		switch w.name {
		case wPing:
			h.status = append(h.status, b.Status(pb.Ping().Build()))
		case wSet:
			h.oks = append(h.oks, b.OK(pb.Set(setKey, w.payload).Build()))
		case wEnqueue:
			r.key = w.appendJobKey(r.key[:0], first+uint64(i))
			h.ints = append(h.ints, b.Int(evalsha(pb, w, r.key)))
		case wPubsub:
			h.ints = append(h.ints, b.Int(pb.Publish(busChannel, w.payload).Build()))
		default:
			h.nulls = append(h.nulls, b.String(pb.Get(setKey).Build()))
		}
	}
	if err := b.Exec(ctx, r.c); err != nil {
		return err
	}
	checkHandles(w, first, h.status, "PONG")
	checkHandles(w, first, h.oks, true)
	checkHandles(w, first, h.ints, 1)
	for i, x := range h.nulls {
		v, ok, err := x.Value()
		expectNull(w, first+uint64(i), v, ok, err)
	}
	return nil
}

// oneTyped runs op seq as one kv.Call.
func (r *echomqRunner) oneTyped(ctx context.Context, w *workload, seq uint64) error {
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	b := &s.b
	switch w.name {
	case wPing:
		v, err := kv.Call(ctx, r.c, b.Ping().Build(), cmds.Status)
		return expect(w, seq, v, err, "PONG")
	case wSet:
		ok, err := kv.Call(ctx, r.c, b.Set(setKey, w.payload).Build(), cmds.OKOrNil)
		return expect(w, seq, ok, err, true)
	case wEnqueue:
		s.key = w.appendJobKey(s.key[:0], seq)
		n, err := kv.Call(ctx, r.c, evalsha(b, w, s.key), cmds.Int)
		return expect(w, seq, n, err, 1)
	case wPubsub:
		n, err := kv.Call(ctx, r.c, b.Publish(busChannel, w.payload).Build(), cmds.Int)
		return expect(w, seq, n, err, 1)
	default:
		v, ok, err := kv.CallNull(ctx, r.c, b.Get(setKey).Build(), cmds.String)
		if err != nil && !isReplyErr(err) {
			return err
		}
		expectNull(w, seq, v, ok, err)
		return nil
	}
}

// evalsha builds op key's enqueue: EVALSHA sha 2 key pending id payload,
// the id being the key's last idLen bytes.
func evalsha(b *cmds.Builder, w *workload, key []byte) cmds.Command {
	k := string(key)
	return b.Evalsha(w.sha, k, pendingKey).Arg(k[len(k)-idLen:], w.payload).Build()
}

// expect checks one decoded reply against want: a server error or a
// reply the decoder refused is a wrong reply (w.fail, nil), any other
// error is returned.
func expect[T comparable](w *workload, seq uint64, got T, err error, want T) error {
	if err != nil {
		if isReplyErr(err) {
			w.fail(seq, err.Error())
			return nil
		}
		return err
	}
	if got != want {
		w.fail(seq, got)
	}
	return nil
}

// expectNull checks a GET's reply: w.payload, not nil.
func expectNull(w *workload, seq uint64, v string, ok bool, err error) {
	switch {
	case err != nil:
		w.fail(seq, err.Error())
	case !ok:
		w.fail(seq, nil)
	case v != w.payload:
		w.fail(seq, v)
	}
}

// checkHandles checks every handle of a batch whose Exec succeeded: any
// error is the reply's (a server error, or one its decoder refused).
func checkHandles[T comparable](w *workload, first uint64, hs []pipeline.Reply[T], want T) {
	for i, h := range hs {
		v, err := h.Value()
		if err != nil {
			w.fail(first+uint64(i), err.Error())
		} else if v != want {
			w.fail(first+uint64(i), v)
		}
	}
}

// isReplyErr: err is about the reply (a server error, or a reply of
// another shape than the decoder's), not the connection.
func isReplyErr(err error) bool {
	if err == nil {
		return false
	}
	var se *resp.ServerError
	var te *resp.TypeError
	return errors.As(err, &se) || errors.As(err, &te) ||
		errors.Is(err, cmds.ErrShape) || errors.Is(err, cmds.ErrNotOK)
}
