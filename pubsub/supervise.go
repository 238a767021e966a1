package pubsub

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/echomq/echomq-go/resp"
)

// connect dials a link, restores every subscription of the set on it
// and makes it the current link. The set cannot change meanwhile
// (opSem), so nothing is subscribed twice or missed.
func (s *Subscription) connect(ctx context.Context) (*link, error) {
	l, err := dialLink(ctx, s.opts, s.hooks, s.sink, s.q.kick)
	if err != nil {
		return nil, err
	}
	l.start(s.opts)
	if err := s.lock(ctx); err != nil {
		l.close()
		return nil, err
	}
	defer s.unlock()
	if err := s.restore(ctx, l); err != nil {
		l.close()
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		l.close()
		return nil, ErrClosed
	}
	s.cur, s.lastErr = l, nil
	close(s.ready)
	return l, nil
}

// restore subscribes l to the whole set and waits for the server to
// confirm it. A server that stays silent fails the link by the health
// check, which fails the wait.
func (s *Subscription) restore(ctx context.Context, l *link) error {
	var ops []*op
	for k := range nkinds {
		if len(s.set[k]) == 0 {
			continue
		}
		args := make([]string, 0, 1+len(s.set[k]))
		args = append(args, kinds[k].sub)
		for n := range s.set[k] {
			args = append(args, n)
		}
		o, err := l.send(ctx, kinds[k].subbed, args...)
		if err != nil {
			return err
		}
		ops = append(ops, o)
	}
	for _, o := range ops {
		if err := o.wait(ctx); err != nil {
			return err
		}
	}
	return nil
}

// supervise waits for the current link to fail, reports the gap and
// reconnects, until Close.
func (s *Subscription) supervise(l *link) {
	defer s.wg.Done()
	for {
		select {
		case <-l.done:
		case <-s.life.Done():
		}
		l.close()
		if s.life.Err() != nil {
			return
		}
		s.lost(l)
		if l = s.redial(); l == nil {
			return
		}
		s.reconnects.Add(1)
	}
}

// lost forgets the failed link and reports the gap, in order: its
// reader has delivered every message it read.
func (s *Subscription) lost(l *link) {
	cause := l.failure()
	s.mu.Lock()
	s.cur, s.ready, s.lastErr = nil, make(chan struct{}), cause
	s.mu.Unlock()
	s.q.pushGap(&GapError{Since: time.Now(), Cause: cause, Losses: 1})
}

// redial connects until it succeeds, with backoff and full jitter, or
// the subscription is closed (then nil).
func (s *Subscription) redial() *link {
	backoff := s.opts.MinBackoff
	for {
		wait := time.Duration(rand.Int64N(int64(backoff)) + 1)
		t := time.NewTimer(wait)
		select {
		case <-s.life.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		l, err := s.connect(s.life)
		if err == nil {
			return l
		}
		if errors.Is(err, ErrClosed) || s.life.Err() != nil {
			return nil
		}
		s.mu.Lock()
		s.lastErr = err
		s.mu.Unlock()
		backoff = min(2*backoff, s.opts.MaxBackoff)
	}
}

// sink turns a message frame into a Message and queues it, waiting for
// room while the buffer is full. A message the decoder skipped for
// breaking the Limits (a TooLarge value) is reported as a gap, in its
// place. It runs on l's reader and reports false when the subscription
// was closed.
func (s *Subscription) sink(l *link, v resp.Value) bool {
	if v.Type == resp.TooLarge {
		s.dropped.Add(1)
		s.q.pushGap(&GapError{Since: time.Now(), Cause: v.Err(), Dropped: 1})
		return true
	}
	pattern, channel, payload, sharded := message(v)
	m := Message{Channel: s.b.name(channel), Sharded: sharded, Payload: s.b.bytes(payload)}
	if pattern != nil {
		m.Pattern = s.b.name(pattern)
	}
	s.received.Add(1)
	return s.q.pushMessage(m, l.halt, l.mustRead, l.stalled.Store)
}
