package main

import (
	"context"
	"sync"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/dispatch"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/pubsub"
	"github.com/echomq/echomq-go/resp"
)

// echomqRunner drives echomq-go the way its users would: one multiplexed
// connection (conn.Conn) for every mode. Depth N reuses one pipeline.Batch
// (or dispatch.Batch for EVALSHA) per runner; goroutine mode calls
// conn.DoFunc (or dispatch.Scripted.Eval) from G goroutines on the one
// connection, whose writer gathers them into shared writes.
type echomqRunner struct {
	addr   string
	c      *conn.Conn
	ex     *dispatch.Scripted
	script *dispatch.Script

	batch  pipeline.Batch
	sbatch dispatch.Batch
	args   dispatch.Args
	key    []byte

	sub  *pubsub.Subscription // pubsub: the subscriber, started by the first run
	done chan struct{}

	// typed: the echomq-typed client (adapter_echomq_typed.go), the same
	// runner on the typed paths: cmds builders, kv.Call, pipeline handles.
	typed bool
	h     handles
}

func newEchomq(cfg config) (runner, error) {
	c, err := conn.Dial(context.Background(), conn.Options{Addr: cfg.addr})
	if err != nil {
		return nil, err
	}
	return &echomqRunner{
		addr:   cfg.addr,
		c:      c,
		ex:     dispatch.NewScripted(c),
		script: dispatch.NewScript("enqueue", enqueueScript),
	}, nil
}

func (r *echomqRunner) close() error {
	if r.sub != nil {
		r.sub.Close()
		<-r.done
	}
	return r.c.Close()
}

// subscribe starts the subscriber: a pubsub.Subscription (a connection
// of its own), Receive in a loop.
func (r *echomqRunner) subscribe(ctx context.Context, addr string, w *workload) error {
	sub, err := pubsub.New(ctx, pubsub.Options{Options: conn.Options{Addr: addr}})
	if err != nil {
		return err
	}
	if err := sub.Subscribe(ctx, busChannel); err != nil {
		sub.Close()
		return err
	}
	r.sub, r.done = sub, make(chan struct{})
	go func() {
		defer close(r.done)
		for {
			m, err := sub.Receive(context.Background())
			if err != nil {
				return // Close
			}
			w.received(m.Payload)
		}
	}()
	return nil
}

// scratch is a goroutine-mode command buffer, and the reply check of the
// op it carries (a method value made once per scratch, so a call makes
// no closure).
type scratch struct {
	cmd   []byte
	key   []byte
	args  dispatch.Args
	r     *echomqRunner
	w     *workload
	seq   uint64
	check func(resp.Value) error
	b     cmds.Builder // echomq-typed: this scratch's commands
}

func (s *scratch) checkReply(v resp.Value) error { s.r.check(s.w, s.seq, v); return nil }

var scratchPool = sync.Pool{New: func() any {
	s := new(scratch)
	s.check = s.checkReply
	return s
}}

// check verifies one reply.
func (r *echomqRunner) check(w *workload, seq uint64, v resp.Value) {
	switch {
	case v.IsError():
		w.fail(seq, v.String())
	case w.name == wEnqueue || w.name == wPubsub:
		if v.Type != resp.Integer || v.Int != 1 {
			w.fail(seq, v.String())
		}
	case w.name == wGet:
		if !v.Equal(w.payload) {
			w.fail(seq, v.String())
		}
	default:
		if !v.Equal(w.want()) {
			w.fail(seq, v.String())
		}
	}
}

// command encodes the plain command of op seq (not EVALSHA) in buf.
func command(buf []byte, w *workload) resp.Cmd {
	switch w.name {
	case wPing:
		return resp.Command(buf, "PING")
	case wSet:
		return resp.Command(buf, "SET", setKey, w.payload)
	case wPubsub:
		return resp.Command(buf, "PUBLISH", busChannel, w.payload)
	default:
		return resp.Command(buf, "GET", setKey)
	}
}

// enqueueArgs fills a with op seq's keys and args.
func enqueueArgs(a *dispatch.Args, key []byte, w *workload, seq uint64) []byte {
	key = w.appendJobKey(key[:0], seq)
	a.Reset()
	a.KeyBytes(key)
	a.Key(pendingKey)
	a.ArgBytes(key[len(key)-idLen:])
	a.Arg(w.payload)
	return key
}

func (r *echomqRunner) run(ctx context.Context, w *workload, n int) error {
	if w.name == wPubsub {
		if r.sub == nil {
			if err := r.subscribe(ctx, r.addr, w); err != nil {
				return err
			}
		}
		return publishRun(ctx, w, n, func() error { return r.send(ctx, w, n) })
	}
	return r.send(ctx, w, n)
}

// send runs n ops of w.
func (r *echomqRunner) send(ctx context.Context, w *workload, n int) error {
	if w.goroutines > 1 || w.depth == 1 {
		one := func(seq uint64) error { return r.one(ctx, w, seq) }
		if r.typed {
			one = func(seq uint64) error { return r.oneTyped(ctx, w, seq) }
		}
		if w.goroutines > 1 {
			return fanOut(ctx, w, n, one)
		}
		return batches(n, 1, func(seq uint64, _ int) error { return one(seq) })
	}
	return batches(n, w.depth, func(first uint64, k int) error {
		if r.typed {
			return r.batchTyped(ctx, w, first, k)
		}
		if w.name == wEnqueue {
			r.sbatch.Reset()
			for i := range k {
				r.key = enqueueArgs(&r.args, r.key, w, first+uint64(i))
				r.sbatch.Add(r.script, &r.args)
			}
			if err := r.ex.EvalBatch(ctx, &r.sbatch); err != nil {
				return err
			}
			for i, v := range r.sbatch.Replies() {
				r.check(w, first+uint64(i), v)
			}
			return nil
		}
		// Encode every command inside the timed loop, as the other
		// clients do (the parity rule in bench/README.md).
		r.batch.Reset()
		for range k {
			switch w.name {
			case wPing:
				r.batch.Add("PING")
			case wSet:
				r.batch.Add("SET", setKey, w.payload)
			case wPubsub:
				r.batch.Add("PUBLISH", busChannel, w.payload)
			default:
				r.batch.Add("GET", setKey)
			}
		}
		if err := r.batch.Exec(ctx, r.c); err != nil {
			return err
		}
		for i, v := range r.batch.Replies() {
			r.check(w, first+uint64(i), v)
		}
		return nil
	})
}

// one runs op seq as a single call.
func (r *echomqRunner) one(ctx context.Context, w *workload, seq uint64) error {
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	s.r, s.w, s.seq = r, w, seq
	check := s.check
	var err error
	if w.name == wEnqueue {
		s.key = enqueueArgs(&s.args, s.key, w, seq)
		err = r.ex.Eval(ctx, r.script, &s.args, check)
	} else {
		cmd := command(s.cmd, w)
		s.cmd = cmd.Bytes()
		err = r.c.DoFunc(ctx, cmd, check)
	}
	return serverFail(w, seq, err)
}

// serverFail records a server error reply of op seq as a wrong reply
// and returns nil; any other error is returned.
func serverFail(w *workload, seq uint64, err error) error {
	if se, ok := err.(*resp.ServerError); ok {
		w.fail(seq, se.Msg)
		return nil
	}
	return err
}
