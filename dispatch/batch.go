package dispatch

import (
	"context"
	"errors"
	"fmt"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/nocopy"
	"github.com/echomq/echomq-go/internal/wire"
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
//
// A Batch must not be copied by value after its first use (go vet's
// copylocks check reports a copy): the copy would share its calls and
// replies with the original. A copy drops that view at its first use:
// EvalBatch refuses it with an error matching ErrCopied and sends
// nothing, and it holds no calls or replies, until its Reset makes it an
// empty Batch of its own; the original is untouched.
type Batch struct {
	noCopy nocopy.NoCopy // go vet reports a copy
	// self is the batch's address, noted at its first use: a Batch at
	// another address is a copy (own).
	self *Batch
	bad  error // ErrCopied, for a copy until its Reset

	// Built by Add.
	calls []batchCall // in order added; beyond len, kept for their memory

	// Scratch for EvalBatch, kept for reuse.
	wire  resp.Cmds      // the commands of one round trip
	redo  []int          // indices of the calls to send again
	loads []pendingLoad  // distinct scripts to load before a re-send
	col   wire.Collector // replies, one slot per call
	facts wire.Facts     // the facts of the commands in wire
}

// ErrCopied is matched by the error of EvalBatch on a Batch copied by
// value after its first use: it shares nothing with the original and
// sends nothing until its Reset.
var ErrCopied = errors.New("dispatch: Batch copied by value after use: Reset it before use")

// own is called first by every method that reads or writes the batch's
// memory: a load and a compare.
func (b *Batch) own() {
	if b.self != b {
		b.adopt()
	}
}

// adopt notes the batch's address at its first use; a copy (a Batch at
// another address than the one noted) drops what it shares with the
// original, unseen, and is refused until Reset.
//
//go:noinline
func (b *Batch) adopt() {
	if b.self == nil {
		b.self = b
		return
	}
	*b = Batch{self: b, bad: ErrCopied}
}

// ready is called first by EvalBatch: the batch's own error (ErrCopied)
// when it may not be sent.
func (b *Batch) ready() error {
	b.own()
	return b.bad
}

// batchCall is one call in a Batch.
type batchCall struct {
	s    *Script
	args Args   // its keys then args
	gen  uint64 // its script's completed loads before its last send
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
	b.own()
	n := len(b.calls)
	if n < cap(b.calls) {
		b.calls = b.calls[:n+1]
	} else {
		b.calls = append(b.calls, batchCall{})
	}
	c := &b.calls[n]
	c.s, c.gen = s, 0
	c.args.copyOf(a)
}

// Len returns the number of calls in the batch.
func (b *Batch) Len() int {
	b.own()
	return len(b.calls)
}

// Reset removes every call and reply, keeping the memory.
func (b *Batch) Reset() {
	b.own()
	b.bad = nil
	for i := range b.calls {
		b.calls[i].s = nil // drop the *Script references, keep the memory
	}
	b.calls = b.calls[:0]
	b.col.Reset()
}

// Replies returns the replies of the last EvalBatch, in the order the
// calls were added. They are valid until the next EvalBatch or Reset.
// After an EvalBatch that failed (the connection broke, ctx ended) there
// are none.
func (b *Batch) Replies() []resp.Value {
	b.own()
	return b.col.Replies()
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

// begin readies one reply slot per call.
func (b *Batch) begin() { b.col.Begin(len(b.calls)) }

// roundTrip encodes the calls listed in idx (every call when idx is nil),
// sends them as one pipeline over s and waits for their replies, which
// land at the calls' indices. With plain (s reads no facts of a plain
// submission: wire.WantsFacts) and every call's name plain, it is sent
// Plain, without facts; else with the facts made from each call's pieces.
func (b *Batch) roundTrip(ctx context.Context, s conn.Sender, native, plain bool, idx []int) error {
	b.wire.Reset()
	b.facts.Reset()
	if plain && native {
		for i := range b.calls {
			if !cmds.Plain(b.calls[i].s.native) {
				plain = false
				break
			}
		}
	}
	if idx == nil {
		for i := range b.calls {
			b.appendCall(i, native, plain)
		}
	} else {
		for _, i := range idx {
			b.appendCall(i, native, plain)
		}
	}
	from := wire.FromCmds
	if plain {
		from = wire.PlainCmds // EVALSHA, and the native names checked above
	}
	w, err := from(&b.wire)
	if err != nil {
		return err
	}
	if !plain {
		if w.Len() != b.facts.Len() {
			return wire.ErrMalformed // cannot be: appendCall adds both
		}
		w = wire.Make(w.Bytes(), w.Len(), b.facts.List())
	}
	return b.col.Exchange(ctx, s, w, idx)
}

// appendCall encodes call i in the executor's form, and its fact unless
// plain.
func (b *Batch) appendCall(i int, native, plain bool) {
	c := &b.calls[i]
	head := &c.s.evalsha
	if native {
		head = &c.s.nativeHead
	}
	hdr := appendCall(&b.wire, head, c.args.nk, &c.args.run)
	if plain {
		return
	}
	// The fact of the command just encoded, from its pieces.
	b.facts.Made(func(keys []cmds.Span) (cmds.Fact, []cmds.Span) {
		return callFact(c.s, native, &c.args, hdr, keys)
	})
}
