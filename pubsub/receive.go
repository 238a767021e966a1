package pubsub

import (
	"context"
	"errors"
	"iter"
	"time"
)

// Receive returns the next message, waiting for one until ctx ends. It
// returns a *GapError (errors.Is ErrGap) in the stream's order when the
// connection was lost and messages may have been missed: the
// subscription goes on, and the next call returns the next message; so
// does a message over the reply Limits, which is dropped. It
// returns ErrClosed once the subscription is closed, and ctx.Err() when
// ctx ends first. Receive may be called from several goroutines; each
// message goes to one of them.
func (s *Subscription) Receive(ctx context.Context) (Message, error) {
	it, err := s.q.pop(ctx)
	if err != nil {
		return Message{}, err
	}
	if it.gap != nil {
		return Message{}, it.gap
	}
	return it.msg, nil
}

// Messages returns an iterator over the messages, for range:
//
//	for msg, err := range sub.Messages(ctx) {
//		if errors.Is(err, pubsub.ErrGap) {
//			continue // some messages were lost; the subscription goes on
//		}
//		if err != nil {
//			return err // ErrClosed, or ctx's error: the last pair
//		}
//		…
//	}
//
// Each pair is what Receive returns. A *GapError is yielded and the
// iteration goes on; ErrClosed or ctx's error is yielded last.
func (s *Subscription) Messages(ctx context.Context) iter.Seq2[Message, error] {
	return func(yield func(Message, error) bool) {
		for {
			m, err := s.Receive(ctx)
			if !yield(m, err) || err != nil && !errors.Is(err, ErrGap) {
				return
			}
		}
	}
}

// Stats are counters of a subscription's life, for monitoring a slow
// consumer and an unsteady connection.
type Stats struct {
	// Received counts the messages read from the server.
	Received uint64
	// Buffered is how many messages and gaps wait for the consumer.
	Buffered int
	// Stalls counts the times the buffer was full, so the subscription
	// stopped reading its connection until the consumer took a message
	// (backpressure), and Stalled is how long that lasted in all.
	Stalls  uint64
	Stalled time.Duration
	// Reconnects counts the connections made after a fault.
	Reconnects uint64
	// Dropped counts the messages skipped for breaking the reply Limits
	// (Options.Limits), each reported as a *GapError; the connection
	// was kept.
	Dropped uint64
	// Connected is false during an outage; LastError is then the fault
	// or the last failed redial's error.
	Connected bool
	LastError error
}

// Stats returns the subscription's counters.
func (s *Subscription) Stats() Stats {
	s.mu.Lock()
	connected, lastErr := s.cur != nil, s.lastErr
	s.mu.Unlock()
	return Stats{
		Received:   s.received.Load(),
		Buffered:   s.q.len(),
		Stalls:     s.q.stalls.Load(),
		Stalled:    time.Duration(s.q.stallDur.Load()),
		Reconnects: s.reconnects.Load(),
		Dropped:    s.dropped.Load(),
		Connected:  connected,
		LastError:  lastErr,
	}
}
