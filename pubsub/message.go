package pubsub

import (
	"errors"
	"strconv"
	"time"
)

// Message is one message received.
type Message struct {
	// Channel is the channel it was published on.
	Channel string
	// Pattern is the pattern that matched the channel, for a PSubscribe
	// subscription; "" otherwise.
	Pattern string
	// Sharded is true for a message of a sharded channel (SSubscribe,
	// published with SPUBLISH).
	Sharded bool
	// Payload is the message. It belongs to the receiver, who may keep
	// and modify it; small payloads share one block of memory, which
	// stays alive as long as one of them does.
	Payload []byte
}

// ErrClosed is returned by calls on a Subscription after Close.
var ErrClosed = errors.New("pubsub: subscription closed")

// ErrGap is matched (errors.Is) by every *GapError.
var ErrGap = errors.New("pubsub: messages may have been lost")

// GapError reports that the subscription's connection was lost, so that
// messages published from then until the subscriptions were restored on
// a new connection never reached this subscriber: pub/sub delivers each
// message at most once, to the subscribers connected when it is
// published. It also reports a message dropped because it broke the
// reply Limits (Options.Limits): the decoder skipped it and the
// connection was kept. Receive returns it in order: after every message
// received before the loss and before every message received after it.
// It is not the end of the subscription, which restores itself.
type GapError struct {
	// Since is when the loss was noticed.
	Since time.Time
	// Cause is the fault that ended the connection (a *conn.BrokenError,
	// matching conn.ErrBroken, wrapping the I/O or protocol error, or
	// conn.ErrTimeout when a health-check PING went unanswered), or, for
	// a dropped message, its *resp.ReplyTooLargeError (errors.Is
	// resp.ErrReplyTooLarge), which names the limit. For a gap of several
	// losses, the last one's.
	Cause error
	// Losses counts the connections lost since the last message
	// delivered: losses in a row, with no message between them, are
	// reported as one gap.
	Losses int
	// Dropped counts the messages dropped in the gap for breaking the
	// reply Limits.
	Dropped int
}

// Error describes the gap.
func (e *GapError) Error() string {
	var s string
	switch {
	case e.Losses > 0:
		s = "pubsub: connection lost at " + e.Since.Format(time.RFC3339Nano) +
			"; messages published until the subscriptions were restored are lost"
		if e.Losses > 1 {
			s += " (" + strconv.Itoa(e.Losses) + " connections lost in a row)"
		}
		if e.Dropped > 0 {
			s += "; " + strconv.Itoa(e.Dropped) + " messages over the reply limits dropped"
		}
	default:
		s = "pubsub: " + strconv.Itoa(e.Dropped) + " message(s) over the reply limits dropped at " +
			e.Since.Format(time.RFC3339Nano) + "; the subscription goes on"
	}
	if e.Cause != nil {
		s += ": " + e.Cause.Error()
	}
	return s
}

// Is makes errors.Is(err, ErrGap) true.
func (e *GapError) Is(target error) bool { return target == ErrGap }

// Unwrap returns the cause.
func (e *GapError) Unwrap() error { return e.Cause }

// Sizes of the builder's memory.
const (
	slabSize = 32 << 10 // one block shared by small payloads
	slabMax  = 2 << 10  // payloads larger than this get memory of their own
	maxNames = 4096     // channel and pattern names remembered
)

// builder copies a message out of the read buffer into memory the
// receiver owns: channel and pattern names are interned (a subscriber
// hears a few channels over and over), small payloads share blocks.
// Only the reader of the current connection uses it.
type builder struct {
	names map[string]string
	slab  []byte
}

// name returns p as a string, without allocating for a name seen before.
func (b *builder) name(p []byte) string {
	if s, ok := b.names[string(p)]; ok {
		return s
	}
	s := string(p)
	if b.names == nil {
		b.names = make(map[string]string)
	}
	if len(b.names) < maxNames {
		b.names[s] = s
	}
	return s
}

// bytes returns a copy of p.
func (b *builder) bytes(p []byte) []byte {
	if len(p) > slabMax {
		return append([]byte(nil), p...)
	}
	if len(b.slab)+len(p) > cap(b.slab) {
		b.slab = make([]byte, 0, slabSize)
	}
	off := len(b.slab)
	b.slab = append(b.slab, p...)
	return b.slab[off:len(b.slab):len(b.slab)]
}
