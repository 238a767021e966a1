package main

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// goredisRunner drives go-redis v9 with its defaults (RESP3). Depth 1 uses
// the plain command methods, depth > 1 one reused Pipeliner (queue depth
// commands, Exec), goroutine mode a pool of exactly G connections.
type goredisRunner struct {
	c    *redis.Client
	pipe redis.Pipeliner
	sub  *redis.PubSub // pubsub: the subscriber, started by the first run
	done chan struct{} // closed when the subscriber's loop ends
}

func newGoredis(cfg config) (runner, error) {
	c := redis.NewClient(&redis.Options{
		Addr:            cfg.addr,
		PoolSize:        max(cfg.goroutines, 1),
		DisableIdentity: true, // Redis 7.0 has no CLIENT SETINFO
	})
	return &goredisRunner{c: c, pipe: c.Pipeline()}, nil
}

func (r *goredisRunner) close() error {
	if r.sub != nil {
		r.sub.Close()
		<-r.done
	}
	return r.c.Close()
}

// subscribe starts the subscriber: PubSub.ReceiveMessage in a loop, its
// fastest receive path (Channel adds a goroutine and a channel hop).
func (r *goredisRunner) subscribe(ctx context.Context, w *workload) error {
	r.sub = r.c.Subscribe(ctx, busChannel)
	if _, err := r.sub.Receive(ctx); err != nil { // the confirmation
		return err
	}
	r.done = make(chan struct{})
	go func() {
		defer close(r.done)
		for {
			m, err := r.sub.ReceiveMessage(context.Background())
			if err != nil {
				return
			}
			w.received([]byte(m.Payload))
		}
	}()
	return nil
}

// queue issues op seq of w on c (the client itself or the pipeline) and
// returns the command to check later.
func (r *goredisRunner) queue(ctx context.Context, c redis.Cmdable, w *workload, seq uint64) redis.Cmder {
	switch w.name {
	case wPing:
		return c.Ping(ctx)
	case wSet:
		return c.Set(ctx, setKey, w.payload, 0)
	case wGet:
		return c.Get(ctx, setKey)
	case wPubsub:
		return c.Publish(ctx, busChannel, w.payload)
	default:
		key, id := w.jobKey(seq)
		return c.EvalSha(ctx, w.sha, []string{key, pendingKey}, id, w.payload)
	}
}

// check verifies one executed command; a non-nil return is an I/O error.
func (r *goredisRunner) check(w *workload, seq uint64, cmd redis.Cmder) error {
	if err := cmd.Err(); err != nil {
		if _, ok := errors.AsType[redis.Error](err); !ok {
			return err
		}
		w.fail(seq, err.Error())
		return nil
	}
	switch c := cmd.(type) {
	case *redis.StatusCmd:
		if c.Val() != w.want() {
			w.fail(seq, c.Val())
		}
	case *redis.StringCmd:
		if c.Val() != w.payload {
			w.fail(seq, c.Val())
		}
	case *redis.Cmd:
		if v, err := c.Int64(); err != nil || v != 1 {
			w.fail(seq, c.Val())
		}
	case *redis.IntCmd:
		if c.Val() != 1 {
			w.fail(seq, c.Val())
		}
	}
	return nil
}

func (r *goredisRunner) run(ctx context.Context, w *workload, n int) error {
	if w.name == wPubsub {
		if r.sub == nil {
			if err := r.subscribe(ctx, w); err != nil {
				return err
			}
		}
		return publishRun(ctx, w, n, func() error { return r.send(ctx, w, n) })
	}
	return r.send(ctx, w, n)
}

// send runs n ops of w.
func (r *goredisRunner) send(ctx context.Context, w *workload, n int) error {
	if w.goroutines > 1 || w.depth == 1 {
		one := func(seq uint64) error { return r.check(w, seq, r.queue(ctx, r.c, w, seq)) }
		if w.goroutines > 1 {
			return fanOut(ctx, w, n, one)
		}
		return batches(n, 1, func(seq uint64, _ int) error { return one(seq) })
	}
	return batches(n, w.depth, func(first uint64, k int) error {
		for i := range k {
			r.queue(ctx, r.pipe, w, first+uint64(i))
		}
		cmds, err := r.pipe.Exec(ctx)
		if err != nil {
			if _, ok := errors.AsType[redis.Error](err); !ok {
				return err
			}
		}
		for i, cmd := range cmds {
			if err := r.check(w, first+uint64(i), cmd); err != nil {
				return err
			}
		}
		return nil
	})
}
