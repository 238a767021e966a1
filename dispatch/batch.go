package dispatch

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/resp"
)

// Batch is a list of script calls an executor sends as one pipeline
// (EvalBatch). Add copies each call's encoded keys and arguments, so one
// Args can be reused for every call. Replies come back in the order the
// calls were added; a script's error reply is that call's reply and does
// not fail the others.
//
// A Batch is reusable: Reset keeps its memory, and in steady state
// neither Add nor EvalBatch allocates. A Batch is not safe for concurrent
// use, and is independent of any executor.
type Batch struct {
	// Built by Add.
	tails []byte      // every call's encoded keys and args, back to back
	calls []batchCall // in order added

	// Scratch for EvalBatch, kept for reuse.
	wire  []byte        // the commands of one round trip
	redo  []int         // indices of the calls to send again
	loads []pendingLoad // distinct scripts to load before a re-send
	st    *batchState   // replies; written by the connection's reader
}

// batchCall is one call in a Batch.
type batchCall struct {
	s        *Script
	nk, na   int
	off, end int    // its tail in Batch.tails
	gen      uint64 // its script's completed loads before its last send
}

// pendingLoad is a script that answered NOSCRIPT within a batch.
type pendingLoad struct {
	s   *Script
	st  *scriptState
	gen uint64 // the oldest gen among its failed calls
	err error
}

// Add appends a call of s with a's keys and args (a may be nil). a's
// encoding is copied: a may be reset and reused at once.
func (b *Batch) Add(s *Script, a *Args) {
	c := batchCall{s: s, off: len(b.tails)}
	if a != nil {
		c.nk, c.na = a.nk, a.na
		b.tails = append(b.tails, a.enc...)
	}
	c.end = len(b.tails)
	b.calls = append(b.calls, c)
}

// Len returns the number of calls in the batch.
func (b *Batch) Len() int { return len(b.calls) }

// Reset removes every call and reply, keeping the memory.
func (b *Batch) Reset() {
	b.tails = b.tails[:0]
	clear(b.calls) // drop the *Script references
	b.calls = b.calls[:0]
	if b.st != nil {
		b.st.arena.Reset()
		clear(b.st.replies)
		b.st.replies = b.st.replies[:0]
	}
}

// Replies returns the replies of the last EvalBatch, in the order the
// calls were added. They are valid until the next EvalBatch or Reset.
// After an EvalBatch that failed (the connection broke, ctx ended) there
// are none.
func (b *Batch) Replies() []resp.Value {
	if b.st == nil {
		return nil
	}
	return b.st.replies
}

// Reply returns the reply of call i of the last EvalBatch. It panics when
// there is no such reply.
func (b *Batch) Reply(i int) resp.Value {
	r := b.Replies()
	if i < 0 || i >= len(r) {
		panic(fmt.Sprintf("dispatch: Batch.Reply(%d) of %d replies", i, len(r)))
	}
	return r[i]
}

// Err returns the *resp.ServerError that call i answered (its text byte
// for byte), or nil. A call whose script could not be loaded keeps its
// NOSCRIPT reply here; EvalBatch returned the load's error.
func (b *Batch) Err(i int) error { return b.Reply(i).Err() }

// batchState is the part of a Batch the connection's reader writes to.
// It is separate so that a Batch abandoned by a cancelled EvalBatch can be
// reused at once: the reader finishes with the state and recycles it.
type batchState struct {
	state   atomic.Int32
	done    chan struct{}
	arena   resp.Arena
	replies []resp.Value
	index   []int // reply i goes to replies[index[i]]; empty: to replies[i]
	err     error
}

// batchState states.
const (
	waiting int32 = iota
	finished
	abandoned
)

var statePool = sync.Pool{New: func() any { return &batchState{done: make(chan struct{}, 1)} }}

// Reply retains reply i at its call's index.
func (st *batchState) Reply(i int, v resp.Value) {
	if st.state.Load() == abandoned {
		return
	}
	if len(st.index) > 0 {
		i = st.index[i]
	}
	st.replies[i] = st.arena.Retain(v)
}

// Done wakes the waiting EvalBatch, or recycles the state when it left.
func (st *batchState) Done(err error) {
	st.err = err
	if st.state.CompareAndSwap(waiting, finished) {
		st.done <- struct{}{}
		return
	}
	st.arena.Reset()
	clear(st.replies)
	st.replies, st.index, st.err = st.replies[:0], st.index[:0], nil
	statePool.Put(st)
}

// begin readies the reply state for n calls.
func (b *Batch) begin() {
	if b.st == nil {
		b.st = statePool.Get().(*batchState)
	}
	st := b.st
	st.arena.Reset()
	if cap(st.replies) < len(b.calls) {
		st.replies = make([]resp.Value, len(b.calls))
	}
	st.replies = st.replies[:len(b.calls)]
}

// roundTrip encodes the calls listed in idx (every call when idx is nil),
// sends them as one pipeline over s and waits for their replies, which
// land at the calls' indices.
func (b *Batch) roundTrip(ctx context.Context, s conn.Sender, native bool, idx []int) error {
	b.wire = b.wire[:0]
	n := len(b.calls)
	if idx == nil {
		for i := range b.calls {
			b.wire = b.appendCall(b.wire, i, native)
		}
	} else {
		n = len(idx)
		for _, i := range idx {
			b.wire = b.appendCall(b.wire, i, native)
		}
	}
	st := b.st
	st.index = append(st.index[:0], idx...)
	st.err = nil
	st.state.Store(waiting)
	if err := conn.Exchange(ctx, s, b.wire, n, st); err != nil {
		return err
	}
	select {
	case <-st.done:
	case <-ctx.Done():
		if st.state.CompareAndSwap(waiting, abandoned) {
			b.st = nil // the reader recycles it
			return ctx.Err()
		}
		<-st.done
	}
	if st.err != nil {
		clear(st.replies)
		st.replies = st.replies[:0]
		return st.err
	}
	return nil
}

// appendCall encodes call i in the executor's form.
func (b *Batch) appendCall(dst []byte, i int, native bool) []byte {
	c := &b.calls[i]
	tail := b.tails[c.off:c.end]
	if native {
		return appendCall(dst, c.s.nativeHead, nativeFixed, c.nk, c.na, tail)
	}
	return appendCall(dst, c.s.evalsha, evalshaFixed, c.nk, c.na, tail)
}
