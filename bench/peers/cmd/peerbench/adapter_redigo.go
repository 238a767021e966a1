package main

import (
	"context"
	"errors"

	"github.com/gomodule/redigo/redis"
)

// redigoRunner drives redigo (RESP2). Depth 1 uses Do on one connection,
// depth > 1 Send x depth + Flush + Receive x depth on one connection,
// goroutine mode a redis.Pool of G connections (Get, Do, Close per op).
type redigoRunner struct {
	addr string
	conn redis.Conn  // depth mode
	pool *redis.Pool // goroutine mode

	sub  *redis.PubSubConn // pubsub: the subscriber, started by the first run
	done chan struct{}
}

func newRedigo(cfg config) (runner, error) {
	r := &redigoRunner{addr: cfg.addr}
	if cfg.goroutines > 1 {
		r.pool = &redis.Pool{
			MaxIdle:   cfg.goroutines,
			MaxActive: cfg.goroutines,
			Wait:      true,
			Dial:      func() (redis.Conn, error) { return redis.Dial("tcp", cfg.addr) },
		}
		return r, nil
	}
	c, err := redis.Dial("tcp", cfg.addr)
	if err != nil {
		return nil, err
	}
	r.conn = c
	return r, nil
}

func (r *redigoRunner) close() error {
	if r.sub != nil {
		r.sub.Close()
		<-r.done
	}
	if r.pool != nil {
		return r.pool.Close()
	}
	return r.conn.Close()
}

// subscribe starts the subscriber: a PubSubConn of its own, Receive in
// a loop.
func (r *redigoRunner) subscribe(w *workload) error {
	c, err := redis.Dial("tcp", r.addr)
	if err != nil {
		return err
	}
	r.sub = &redis.PubSubConn{Conn: c}
	if err := r.sub.Subscribe(busChannel); err != nil {
		return err
	}
	if v, ok := r.sub.Receive().(redis.Subscription); !ok || v.Count != 1 { // the confirmation
		return errors.New("redigo: SUBSCRIBE not confirmed")
	}
	r.done = make(chan struct{})
	go func() {
		defer close(r.done)
		for {
			switch v := r.sub.Receive().(type) {
			case redis.Message:
				w.received(v.Data)
			case error:
				return
			}
		}
	}()
	return nil
}

// args returns the command name and arguments for op seq of w.
func (r *redigoRunner) args(w *workload, seq uint64) (string, []any) {
	switch w.name {
	case wPing:
		return "PING", nil
	case wSet:
		return "SET", []any{setKey, w.payload}
	case wGet:
		return "GET", []any{setKey}
	case wPubsub:
		return "PUBLISH", []any{busChannel, w.payload}
	default:
		key, id := w.jobKey(seq)
		return "EVALSHA", []any{w.sha, 2, key, pendingKey, id, w.payload}
	}
}

// check verifies one reply; a non-nil return is an I/O or protocol error.
func (r *redigoRunner) check(w *workload, seq uint64, reply any, err error) error {
	if err != nil {
		if _, ok := errors.AsType[redis.Error](err); !ok {
			return err
		}
		w.fail(seq, err.Error())
		return nil
	}
	switch w.name {
	case wEnqueue, wPubsub:
		if v, ok := reply.(int64); !ok || v != 1 {
			w.fail(seq, reply)
		}
	case wGet:
		if v, ok := reply.([]byte); !ok || string(v) != w.payload {
			w.fail(seq, reply)
		}
	default:
		if v, ok := reply.(string); !ok || v != w.want() {
			w.fail(seq, reply)
		}
	}
	return nil
}

func (r *redigoRunner) run(ctx context.Context, w *workload, n int) error {
	if w.name == wPubsub {
		if r.sub == nil {
			if err := r.subscribe(w); err != nil {
				return err
			}
		}
		return publishRun(ctx, w, n, func() error { return r.send(ctx, w, n) })
	}
	return r.send(ctx, w, n)
}

// send runs n ops of w.
func (r *redigoRunner) send(ctx context.Context, w *workload, n int) error {
	if w.goroutines > 1 {
		return fanOut(ctx, w, n, func(seq uint64) error {
			c := r.pool.Get()
			name, args := r.args(w, seq)
			reply, err := c.Do(name, args...)
			c.Close()
			return r.check(w, seq, reply, err)
		})
	}
	if w.depth == 1 {
		return batches(n, 1, func(seq uint64, _ int) error {
			name, args := r.args(w, seq)
			reply, err := r.conn.Do(name, args...)
			return r.check(w, seq, reply, err)
		})
	}
	return batches(n, w.depth, func(first uint64, k int) error {
		for i := range k {
			name, args := r.args(w, first+uint64(i))
			if err := r.conn.Send(name, args...); err != nil {
				return err
			}
		}
		if err := r.conn.Flush(); err != nil {
			return err
		}
		for i := range k {
			reply, err := r.conn.Receive()
			if err := r.check(w, first+uint64(i), reply, err); err != nil {
				return err
			}
		}
		return nil
	})
}
