package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/pubsub"
)

// busDrain is how long the subscriber waits, once every publisher is
// done, for the messages still on their way, when none arrives.
const busDrain = 5 * time.Second

// busWorkload measures pub/sub end to end: -goroutines publishers send
// PUBLISH (-depth per pipelined batch) on the run's channel, and one
// pubsub.Subscription receives. One operation is one message; each
// carries its number and its publish time, so the subscriber records
// the publish-to-receive latency and counts what never came (lost),
// what came twice or out of its publisher's order, and the reconnects.
func busWorkload(ctx context.Context, nd *node, cfg config) (*workload, error) {
	channel := "emqbench:" + nd.runID + ":bus"
	sub, err := pubsub.New(ctx, pubsub.Options{Options: nd.opts})
	if err != nil {
		return nil, fmt.Errorf("subscriber: %w", err)
	}
	if err := sub.Subscribe(ctx, channel); err != nil {
		sub.Close()
		return nil, fmt.Errorf("subscribe: %w", err)
	}
	b := &bus{cfg: cfg, nd: nd, sub: sub, channel: channel, base: time.Now()}
	return &workload{
		method: fmt.Sprintf("PUBLISH <channel> <its number and time, padded to %d B>, received by one subscriber", cfg.size),
		latPer: "message",
		run:    b.run,
		close:  func() { sub.Close() },
		finish: b.finish,
	}, nil
}

// bus is one pubsub run.
type bus struct {
	cfg     config
	nd      *node
	sub     *pubsub.Subscription
	channel string
	base    time.Time // message times are offsets from it (monotonic)

	published atomic.Int64 // PUBLISH replies that counted a subscriber
	unheard   atomic.Int64 // PUBLISH replies that counted none
	// Set by the receiver; read after it has stopped.
	seen      []uint64 // bit i: message i received
	received  int64
	dups      int64
	reordered int64
	gaps      int64
}

// run publishes total messages (or until ctx ends) and receives them,
// adding each received one to done and its latency to lat.
func (b *bus) run(ctx context.Context, total int64, done *atomic.Int64, lat *latencies) error {
	recvCtx, stopRecv := context.WithCancel(context.Background())
	defer stopRecv()
	recvErr := make(chan error, 1)
	go func() { recvErr <- b.receive(recvCtx, done, lat) }()

	var next atomic.Int64
	var wg sync.WaitGroup
	var pubErr error
	var once sync.Once
	pubCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	for g := range b.cfg.goroutines {
		wg.Go(func() {
			if err := b.publish(pubCtx, g, total, &next); err != nil && pubCtx.Err() == nil {
				once.Do(func() { pubErr = err; cancel() })
			}
		})
	}
	wg.Wait()
	// Drain: wait for every counted message, or busDrain without one.
	last, quiet := done.Load(), time.Now()
	for done.Load() < b.published.Load() && pubErr == nil && ctx.Err() == nil {
		if n := done.Load(); n != last {
			last, quiet = n, time.Now()
		} else if time.Since(quiet) > busDrain {
			break
		}
		time.Sleep(time.Millisecond)
	}
	stopRecv()
	if err := <-recvErr; err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	if pubErr != nil {
		return pubErr
	}
	return ctx.Err()
}

// publish is publisher g: it takes the next -depth message numbers until
// total are taken, and publishes them in one pipeline.
func (b *bus) publish(ctx context.Context, g int, total int64, next *atomic.Int64) error {
	c := b.nd.conn(g)
	depth := int64(b.cfg.depth)
	var batch pipeline.Batch
	msg := make([]byte, 0, max(b.cfg.size, 64))
	for ctx.Err() == nil {
		first := next.Add(depth) - depth
		if first >= total || first < 0 {
			return nil
		}
		k := min(depth, total-first)
		batch.Reset()
		for i := first; i < first+k; i++ {
			msg = b.message(msg[:0], g, i)
			batch.Begin(3)
			batch.Arg("PUBLISH")
			batch.Arg(b.channel)
			batch.ArgBytes(msg)
		}
		if err := batch.Exec(ctx, c); err != nil {
			return err
		}
		for i, v := range batch.Replies() {
			if err := v.Err(); err != nil {
				return fmt.Errorf("PUBLISH %d: %w", first+int64(i), err)
			}
			if v.Int > 0 {
				b.published.Add(1)
			} else {
				b.unheard.Add(1)
			}
		}
	}
	return ctx.Err()
}

// message writes "g:i:ns:" and padding to -size: the publisher, the
// message's number and its publish time.
func (b *bus) message(dst []byte, g int, i int64) []byte {
	dst = strconv.AppendInt(dst, int64(g), 10)
	dst = append(dst, ':')
	dst = strconv.AppendInt(dst, i, 10)
	dst = append(dst, ':')
	dst = strconv.AppendInt(dst, int64(time.Since(b.base)), 10)
	dst = append(dst, ':')
	for len(dst) < b.cfg.size {
		dst = append(dst, 'x')
	}
	return dst
}

// receive takes messages until ctx ends, checking and timing each.
func (b *bus) receive(ctx context.Context, done *atomic.Int64, lat *latencies) error {
	last := make([]int64, b.cfg.goroutines) // each publisher's last number, +1
	for {
		m, err := b.sub.Receive(ctx)
		if errors.Is(err, pubsub.ErrGap) {
			b.gaps++
			continue
		}
		if err != nil {
			return err
		}
		g, i, at, ok := parseBusMessage(m.Payload)
		if !ok || g < 0 || g >= len(last) {
			return fmt.Errorf("subscriber: unexpected message %q", m.Payload)
		}
		lat.record(0, time.Since(b.base)-time.Duration(at))
		if w := int(i / 64); w >= len(b.seen) {
			b.seen = append(b.seen, make([]uint64, max(w+1, 2*len(b.seen))-len(b.seen))...)
		}
		bit := uint64(1) << (i % 64)
		if b.seen[i/64]&bit != 0 {
			b.dups++
			continue
		}
		b.seen[i/64] |= bit
		if i+1 < last[g] {
			b.reordered++
		}
		last[g] = max(last[g], i+1)
		b.received++
		done.Add(1)
	}
}

// parseBusMessage reads "g:i:ns:…".
func parseBusMessage(p []byte) (g int, i, at int64, ok bool) {
	var f [3]int64
	for k := range f {
		n, j := int64(0), 0
		for ; j < len(p) && p[j] >= '0' && p[j] <= '9'; j++ {
			n = n*10 + int64(p[j]-'0')
		}
		if j == 0 || j == len(p) || p[j] != ':' {
			return 0, 0, 0, false
		}
		f[k], p = n, p[j+1:]
	}
	return int(f[0]), f[1], f[2], true
}

// finish puts the delivery figures in the report.
func (b *bus) finish(r *report) {
	st := b.sub.Stats()
	sent := b.published.Load() + b.unheard.Load()
	r.Bus = &busReport{
		Published:  sent,
		Received:   b.received,
		Lost:       sent - b.received,
		Unheard:    b.unheard.Load(),
		Duplicates: b.dups,
		Reordered:  b.reordered,
		Gaps:       b.gaps,
		Reconnects: st.Reconnects,
		Stalls:     st.Stalls,
	}
}
