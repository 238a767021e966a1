package main

import (
	"context"
	"time"

	"github.com/redis/rueidis"
)

// rueidisRunner drives rueidis with its defaults (RESP3, auto-pipelining).
//
// Commands are built with the command builder for each batch, just before
// the DoMulti that sends them, and never reused: rueidis recycles an
// unpinned Completed into its pool after Do/DoMulti, so building them once
// up front would need Pin(), which we do not use. The batch slice itself is
// allocated once and reused.
type rueidisRunner struct {
	c    rueidis.Client
	cmds rueidis.Commands // reused batch slice

	stop context.CancelFunc // pubsub: ends the subscriber's Receive
	done chan error
}

func newRueidis(cfg config) (runner, error) {
	c, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress:       []string{cfg.addr},
		ForceSingleClient: true, // standalone server: skip the cluster probe
	})
	if err != nil {
		return nil, err
	}
	return &rueidisRunner{c: c, cmds: make(rueidis.Commands, 0, cfg.depth)}, nil
}

func (r *rueidisRunner) close() error {
	if r.stop != nil {
		r.stop()
		<-r.done
	}
	r.c.Close()
	return nil
}

// subscribe starts the subscriber: Client.Receive with a callback (on
// rueidis's reading goroutine), and waits until the server counts it.
func (r *rueidisRunner) subscribe(ctx context.Context, w *workload) error {
	sctx, stop := context.WithCancel(context.Background())
	r.stop, r.done = stop, make(chan error, 1)
	go func() {
		r.done <- r.c.Receive(sctx, r.c.B().Subscribe().Channel(busChannel).Build(), func(m rueidis.PubSubMessage) {
			w.received([]byte(m.Message))
		})
	}()
	for {
		n, err := r.c.Do(ctx, r.c.B().PubsubNumsub().Channel(busChannel).Build()).AsIntMap()
		if err != nil {
			return err
		}
		if n[busChannel] == 1 {
			return nil
		}
		select {
		case err := <-r.done:
			return err
		case <-time.After(time.Millisecond):
		}
	}
}

// build returns the command for op seq of w.
func (r *rueidisRunner) build(w *workload, seq uint64) rueidis.Completed {
	b := r.c.B()
	switch w.name {
	case wPing:
		return b.Ping().Build()
	case wSet:
		return b.Set().Key(setKey).Value(w.payload).Build()
	case wGet:
		return b.Get().Key(setKey).Build()
	case wPubsub:
		return b.Publish().Channel(busChannel).Message(w.payload).Build()
	default:
		key, id := w.jobKey(seq)
		return b.Evalsha().Sha1(w.sha).Numkeys(2).Key(key, pendingKey).Arg(id, w.payload).Build()
	}
}

// check verifies one reply; a non-nil return is a client or I/O error.
func (r *rueidisRunner) check(w *workload, seq uint64, res rueidis.RedisResult) error {
	if err := res.NonRedisError(); err != nil {
		return err
	}
	switch w.name {
	case wEnqueue, wPubsub:
		if v, err := res.AsInt64(); err != nil || v != 1 {
			w.fail(seq, res)
		}
	case wGet:
		if v, err := res.ToString(); err != nil || v != w.payload {
			w.fail(seq, res)
		}
	default:
		if v, err := res.ToString(); err != nil || v != w.want() {
			w.fail(seq, res)
		}
	}
	return nil
}

func (r *rueidisRunner) run(ctx context.Context, w *workload, n int) error {
	if w.name == wPubsub {
		if r.stop == nil {
			if err := r.subscribe(ctx, w); err != nil {
				return err
			}
		}
		return publishRun(ctx, w, n, func() error { return r.send(ctx, w, n) })
	}
	return r.send(ctx, w, n)
}

// send runs n ops of w.
func (r *rueidisRunner) send(ctx context.Context, w *workload, n int) error {
	if w.goroutines > 1 {
		return fanOut(ctx, w, n, func(seq uint64) error {
			return r.check(w, seq, r.c.Do(ctx, r.build(w, seq)))
		})
	}
	if w.depth == 1 {
		return batches(n, 1, func(seq uint64, _ int) error {
			return r.check(w, seq, r.c.Do(ctx, r.build(w, seq)))
		})
	}
	return batches(n, w.depth, func(first uint64, k int) error {
		r.cmds = r.cmds[:0]
		for i := range k {
			r.cmds = append(r.cmds, r.build(w, first+uint64(i)))
		}
		for i, res := range r.c.DoMulti(ctx, r.cmds...) {
			if err := r.check(w, first+uint64(i), res); err != nil {
				return err
			}
		}
		return nil
	})
}
