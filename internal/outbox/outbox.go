// Package outbox is where a consumer's handler goroutines leave their
// outcomes for the one goroutine that sends them to the server: emq's
// Worker and the job system's Server share it.
package outbox

import "sync"

// Box holds values put by many goroutines until one takes them all. Its
// zero value is not ready: use New.
type Box[T any] struct {
	mu    sync.Mutex
	items []T           // guarded by mu
	want  int           // guarded by mu: the count of items that wakes the taker (>= 1)
	wake  chan struct{} // one token: items reached want
}

// New returns an empty Box.
func New[T any]() *Box[T] { return &Box[T]{want: 1, wake: make(chan struct{}, 1)} }

// Put leaves v, waking the taker if it may be waiting: when the box holds
// as many values as the taker wants (one, unless WakeAt said more).
func (b *Box[T]) Put(v T) {
	b.mu.Lock()
	b.items = append(b.items, v)
	hit := len(b.items) == b.want
	b.mu.Unlock()
	if hit {
		b.signal()
	}
}

func (b *Box[T]) signal() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// Take appends every value left to dst, emptying the box. The next value
// put wakes the taker again (WakeAt raises that until the next Take).
func (b *Box[T]) Take(dst []T) []T {
	b.mu.Lock()
	dst = append(dst, b.items...)
	clear(b.items)
	b.items = b.items[:0]
	b.want = 1
	b.mu.Unlock()
	return dst
}

// WakeAt makes Wake's token wait for n values in the box (n < 1: one),
// until the next Take: a taker that knows fewer than n values cannot
// change what it does is not woken for each. When the box holds n
// already, the token is given now.
func (b *Box[T]) WakeAt(n int) {
	b.mu.Lock()
	b.want = max(n, 1)
	hit := len(b.items) >= b.want
	b.mu.Unlock()
	if hit {
		b.signal()
	}
}

// Len returns how many values wait.
func (b *Box[T]) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.items)
}

// Wake has a token once the box reached the count the taker wants (by
// default: became non-empty) since the last receive.
func (b *Box[T]) Wake() <-chan struct{} { return b.wake }
