// Package outbox is where a consumer's handler goroutines leave their
// outcomes for the one goroutine that sends them to the server: emq's
// Worker and the job system's Server share it. A [Relay] also carries the
// jobs the other way, from that goroutine to the handlers, under the same
// lock: a handler leaves its outcome and takes its next job in one step.
package outbox

import (
	"sync"
	"sync/atomic"
)

// Box holds values put by many goroutines until one takes them all. Its
// zero value is not ready: use New.
type Box[T any] struct{ r Relay[T, struct{}] }

// New returns an empty Box.
func New[T any]() *Box[T] {
	b := new(Box[T])
	b.r.init()
	return b
}

// Put leaves v, waking the taker if it may be waiting: when the box holds
// as many values as the taker wants (one, unless WakeAt said more).
func (b *Box[T]) Put(v T) { b.r.Put(v) }

// Take appends every value left to dst, emptying the box. The next value
// put wakes the taker again (WakeAt raises that until the next Take).
func (b *Box[T]) Take(dst []T) []T { return b.r.Take(dst) }

// WakeAt makes Wake's token wait for n values in the box (n < 1: one),
// until the next Take: a taker that knows fewer than n values cannot
// change what it does is not woken for each. When the box holds n
// already, the token is given now.
func (b *Box[T]) WakeAt(n int) { b.r.WakeAt(n) }

// Len returns how many values wait.
func (b *Box[T]) Len() int { return b.r.Len() }

// Wake has a token once the box reached the count the taker wants (by
// default: became non-empty) since the last receive.
func (b *Box[T]) Wake() <-chan struct{} { return b.r.Wake() }

// Relay is a [Box] of outcomes T that also hands jobs J, first in first
// out, to the goroutines that leave the outcomes: one goroutine (the
// taker) hands jobs over and takes the outcomes; the others (handlers)
// call Next, which leaves an outcome and takes the next job in one lock,
// and parks the handler while there is no job. A round's jobs are handed
// over with one lock, waking only as many parked handlers as there are
// jobs; a running handler takes its next job without a channel operation
// or a wakeup. Its zero value is not ready: use NewRelay.
type Relay[T, J any] struct {
	mu    sync.Mutex
	items []T           // guarded by mu
	want  int           // guarded by mu: the count of items that wakes the taker (>= 1)
	wake  chan struct{} // one token: items reached want

	jobs   []J             // guarded by mu: handed over, not taken, from head on
	head   int             // guarded by mu
	closed bool            // guarded by mu: no more jobs; Next returns false once jobs is empty
	idle   []chan struct{} // guarded by mu: the parked handlers' wake channels
	queued atomic.Int64    // len(jobs) - head: written under mu, read without it
}

// NewRelay returns an empty Relay.
func NewRelay[T, J any]() *Relay[T, J] {
	r := new(Relay[T, J])
	r.init()
	return r
}

func (r *Relay[T, J]) init() { r.want, r.wake = 1, make(chan struct{}, 1) }

// Put leaves v, waking the taker if it may be waiting (see [Box.Put]).
func (r *Relay[T, J]) Put(v T) {
	r.mu.Lock()
	hit := r.put(v)
	r.mu.Unlock()
	if hit {
		r.signal()
	}
}

// put appends v under mu and reports whether the taker is to be woken.
func (r *Relay[T, J]) put(v T) bool {
	r.items = append(r.items, v)
	return len(r.items) == r.want
}

func (r *Relay[T, J]) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Take appends every outcome left to dst (see [Box.Take]).
func (r *Relay[T, J]) Take(dst []T) []T {
	r.mu.Lock()
	dst = append(dst, r.items...)
	clear(r.items)
	r.items = r.items[:0]
	r.want = 1
	r.mu.Unlock()
	return dst
}

// WakeAt makes Wake's token wait for n outcomes (see [Box.WakeAt]).
func (r *Relay[T, J]) WakeAt(n int) {
	r.mu.Lock()
	r.want = max(n, 1)
	hit := len(r.items) >= r.want
	r.mu.Unlock()
	if hit {
		r.signal()
	}
}

// Len returns how many outcomes wait.
func (r *Relay[T, J]) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.items)
}

// Wake has a token once the outcomes reached the count the taker wants
// (see [Box.Wake]).
func (r *Relay[T, J]) Wake() <-chan struct{} { return r.wake }

// Queued returns how many jobs handed over no handler has taken.
// It takes no lock: the taker asks it often, and the handlers take jobs
// meanwhile (so it is a snapshot, as a channel's len is).
func (r *Relay[T, J]) Queued() int { return int(r.queued.Load()) }

// Hand queues jobs for the handlers, in order, and wakes one parked
// handler, if any: a handler that takes a job and leaves more queued
// wakes the next parked one (Next), so a round's jobs wake no more
// handlers than the running ones leave jobs for, and a handler that blocks
// on its job stalls no other. It must not be called after Close.
func (r *Relay[T, J]) Hand(jobs ...J) {
	if len(jobs) == 0 {
		return
	}
	r.mu.Lock()
	if r.head > 0 && r.head == len(r.jobs) {
		clear(r.jobs)
		r.jobs, r.head = r.jobs[:0], 0
	} else if r.head > len(r.jobs)/2 {
		n := copy(r.jobs, r.jobs[r.head:])
		clear(r.jobs[n:])
		r.jobs, r.head = r.jobs[:n], 0
	}
	r.jobs = append(r.jobs, jobs...)
	r.queued.Store(int64(len(r.jobs) - r.head))
	next := r.popIdle()
	r.mu.Unlock()
	if next != nil {
		next <- struct{}{}
	}
}

// popIdle takes the wake channel of the handler parked last, or nil; under
// mu.
func (r *Relay[T, J]) popIdle() chan struct{} {
	n := len(r.idle)
	if n == 0 {
		return nil
	}
	c := r.idle[n-1]
	r.idle[n-1] = nil
	r.idle = r.idle[:n-1]
	return c
}

// Next leaves v (when put) as Put does and returns the next job, parking
// the caller on wake (its own channel, of room for one token, used by no
// other goroutine) while no job is queued. When it takes a job and more
// are queued, it wakes a parked handler for them. It returns false once
// the relay is closed and no job is left: v is left all the same.
func (r *Relay[T, J]) Next(wake chan struct{}, v T, put bool) (J, bool) {
	r.mu.Lock()
	hit := put && r.put(v)
	for {
		if r.head < len(r.jobs) {
			j := r.jobs[r.head]
			var zero J
			r.jobs[r.head] = zero
			r.head++
			r.queued.Add(-1)
			var next chan struct{}
			if r.head < len(r.jobs) {
				next = r.popIdle()
			}
			r.mu.Unlock()
			// The handler first, the taker last: a goroutine readied
			// runs next on this P, in place of the one readied before
			// it, and the taker's wake is the one not to put off.
			if next != nil {
				next <- struct{}{}
			}
			if hit {
				r.signal()
			}
			return j, true
		}
		if r.closed {
			r.mu.Unlock()
			if hit {
				r.signal()
			}
			var zero J
			return zero, false
		}
		r.idle = append(r.idle, wake)
		r.mu.Unlock()
		if hit {
			r.signal()
			hit = false
		}
		<-wake
		r.mu.Lock()
	}
}

// Close takes back the jobs no handler has taken, appended to dst, and
// closes the relay: every handler's Next returns false from then on, and
// the parked ones are woken.
func (r *Relay[T, J]) Close(dst []J) []J {
	r.mu.Lock()
	dst = append(dst, r.jobs[r.head:]...)
	clear(r.jobs)
	r.jobs, r.head = r.jobs[:0], 0
	r.queued.Store(0)
	r.closed = true
	idle := r.idle
	r.idle = nil
	r.mu.Unlock()
	for _, c := range idle {
		c <- struct{}{}
	}
	return dst
}
