package pubsub

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// item is one thing the consumer receives: a message, or a gap.
type item struct {
	msg Message
	gap *GapError
}

// queue is the bounded buffer between the connection's reader (one
// producer at a time) and the consumers. A full queue makes the producer
// wait (backpressure): it never drops a message. It lets the producer
// overflow the bound while the producer says so (a command waits for its
// reply, which comes after the messages the server sent before it). Gaps
// do not count against the bound, so the producer's owner can always
// report one; a gap that follows another with no message between is
// merged into it.
//
// The ring holds items head..head+n-1 (mod len(ring)); it grows only
// for gaps beyond the bound.
type queue struct {
	max int // messages held at most

	mu       sync.Mutex
	ring     []item
	head, n  int
	msgs     int  // messages in the ring (n minus gaps)
	closed   bool // no more items, ever
	waiters  int  // consumers waiting for an item
	starved  bool // the producer waits for room
	ready    chan struct{}
	room     chan struct{}
	done     chan struct{} // closed by close
	stalls   atomic.Uint64 // times the producer waited for room
	stallDur atomic.Int64  // nanoseconds it waited, in all
}

func newQueue(max int) *queue {
	return &queue{
		max:   max,
		ring:  make([]item, max+1),
		ready: make(chan struct{}, 1),
		room:  make(chan struct{}, 1),
		done:  make(chan struct{}),
	}
}

// pushMessage appends a message, waiting while the queue is full, unless
// overflow reports true (checked again after kick); onWait is called with
// true when it starts waiting and false when it stops. It reports false
// when the queue was closed or stop was closed first.
func (q *queue) pushMessage(m Message, stop <-chan struct{}, overflow func() bool, onWait func(bool)) bool {
	q.mu.Lock()
	if q.msgs >= q.max && !q.closed && !overflow() {
		start := time.Now()
		q.stalls.Add(1)
		onWait(true)
		for q.msgs >= q.max && !q.closed && !overflow() {
			q.starved = true
			q.mu.Unlock()
			select {
			case <-q.room:
			case <-q.done:
			case <-stop:
				onWait(false)
				q.stallDur.Add(int64(time.Since(start)))
				return false
			}
			q.mu.Lock()
		}
		onWait(false)
		q.stallDur.Add(int64(time.Since(start)))
	}
	if q.closed {
		q.mu.Unlock()
		return false
	}
	q.put(item{msg: m})
	q.msgs++
	q.mu.Unlock()
	return true
}

// kick wakes a producer waiting for room, to check overflow again.
func (q *queue) kick() { signal(q.room) }

// pushGap appends a gap at once, merging it into a gap already last.
func (q *queue) pushGap(g *GapError) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	if q.n > 0 {
		if last := &q.ring[(q.head+q.n-1)%len(q.ring)]; last.gap != nil {
			last.gap.Losses += g.Losses
			last.gap.Dropped += g.Dropped
			last.gap.Cause = g.Cause
			return
		}
	}
	q.put(item{gap: g})
}

// put appends it, with mu held, and wakes a waiting consumer.
func (q *queue) put(it item) {
	if q.n == len(q.ring) {
		ring := make([]item, 2*len(q.ring))
		for i := range q.n {
			ring[i] = q.ring[(q.head+i)%len(q.ring)]
		}
		q.ring, q.head = ring, 0
	}
	q.ring[(q.head+q.n)%len(q.ring)] = it
	q.n++
	if q.waiters > 0 {
		signal(q.ready)
	}
}

// pop takes the oldest item, waiting for one until ctx ends or the
// queue is closed (ErrClosed: the items left are dropped).
func (q *queue) pop(ctx context.Context) (item, error) {
	q.mu.Lock()
	for q.n == 0 || q.closed {
		if q.closed {
			q.mu.Unlock()
			return item{}, ErrClosed
		}
		q.waiters++
		q.mu.Unlock()
		select {
		case <-q.ready:
		case <-q.done:
		case <-ctx.Done():
			q.mu.Lock()
			q.waiters--
			if q.n > 0 && q.waiters > 0 {
				signal(q.ready) // the wake-up may have been ours: pass it on
			}
			q.mu.Unlock()
			return item{}, ctx.Err()
		}
		q.mu.Lock()
		q.waiters--
	}
	slot := &q.ring[q.head]
	it := *slot
	*slot = item{}
	q.head = (q.head + 1) % len(q.ring)
	q.n--
	if it.gap == nil {
		q.msgs--
		if q.starved {
			q.starved = false
			signal(q.room)
		}
	}
	if q.n > 0 && q.waiters > 0 {
		signal(q.ready)
	}
	q.mu.Unlock()
	return it, nil
}

// len returns the number of items waiting.
func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n
}

// close drops the items and wakes everyone: consumers get ErrClosed, a
// waiting producer gives up.
func (q *queue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	q.closed = true
	clear(q.ring)
	q.n, q.msgs = 0, 0
	close(q.done)
}

// signal wakes one waiter of ch without blocking: a wake-up already
// pending is enough.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
