package dispatch

import (
	"context"
	"fmt"

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
	wire  []byte         // the commands of one round trip
	redo  []int          // indices of the calls to send again
	loads []pendingLoad  // distinct scripts to load before a re-send
	col   conn.Collector // replies, one slot per call
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
	b.col.Reset()
}

// Replies returns the replies of the last EvalBatch, in the order the
// calls were added. They are valid until the next EvalBatch or Reset.
// After an EvalBatch that failed (the connection broke, ctx ended) there
// are none.
func (b *Batch) Replies() []resp.Value { return b.col.Replies() }

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

// begin readies one reply slot per call.
func (b *Batch) begin() { b.col.Begin(len(b.calls)) }

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
	return b.col.Exchange(ctx, s, b.wire, n, idx)
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
