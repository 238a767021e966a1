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
	wake  chan struct{} // one token: items became non-empty
}

// New returns an empty Box.
func New[T any]() *Box[T] { return &Box[T]{wake: make(chan struct{}, 1)} }

// Put leaves v, waking the taker if it may be waiting.
func (b *Box[T]) Put(v T) {
	b.mu.Lock()
	b.items = append(b.items, v)
	first := len(b.items) == 1
	b.mu.Unlock()
	if first {
		select {
		case b.wake <- struct{}{}:
		default:
		}
	}
}

// Take appends every value left to dst, emptying the box.
func (b *Box[T]) Take(dst []T) []T {
	b.mu.Lock()
	dst = append(dst, b.items...)
	clear(b.items)
	b.items = b.items[:0]
	b.mu.Unlock()
	return dst
}

// Len returns how many values wait.
func (b *Box[T]) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.items)
}

// Wake has a token once the box became non-empty since the last receive.
func (b *Box[T]) Wake() <-chan struct{} { return b.wake }
