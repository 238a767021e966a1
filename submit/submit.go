// Package submit defines the submission, the one type every Sender of
// this module takes: commands encoded back to back, with what is known
// about each (cmds.Fact). The module's encoders (resp's counted types by
// way of conn.CmdsOf, the typed builders, a pipeline.Batch, dispatch)
// make submissions with the facts they know as they write; a Sender
// written outside the module (a fake for tests, a proxy, a wrapping
// middleware: see package conn's examples) passes on the submissions it
// is given, or makes its own with New, which checks the bytes once.
//
// A Cmds has no exported fields: its bytes and facts always describe
// each other, and no user's code can mark a submission as the module's
// own (unseen by hooks) or as needing no read of its bytes.
package submit

import (
	"context"
	"errors"
	"iter"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/internal/subkey"
	"github.com/echomq/echomq-go/resp"
)

// Cmds is a submission: Len commands encoded back to back in Bytes (RESP
// arrays of bulk strings) and, when known, Facts: one cmds.Fact per
// command, in order (its kind and timeout, its keys, its Size), known
// where it was encoded (or by New, as it checks a user's bytes). Facts
// nil means unknown (a submission of resp's counted commands): the
// Sender that receives it reads them from Bytes, once.
//
// The zero Cmds is the empty submission. Make one with New (a user's
// bytes), conn.CmdsOf or conn.CmdsOfBatch (resp's counted commands), or
// take the one a Sender was given; range over its commands with All.
type Cmds struct {
	b     []byte
	n     int
	facts []cmds.Fact
	// plain, with facts nil: the module's encoder found every command
	// plain by its name, so a Sender of the module that needs no more
	// than its guard sends it unread (see Plain).
	plain bool
	// seen says which commands hooks see: 0 every one, -1 none (the
	// module's own housekeeping), k > 0 command k-1 alone.
	seen int32
}

// ErrMalformed is matched (errors.Is) by the error of a submission whose
// bytes are not its number of whole commands (arrays of bulk strings):
// New returns it, and a Sender refuses such a submission with it.
// Nothing is sent.
var ErrMalformed = errors.New("conn: submission bytes are not N encoded commands")

// New is the submission of the n commands encoded in b, put together by
// a user's code (a fake, a proxy). It reads b once: it checks that b is
// exactly n whole commands, arrays of bulk strings of at least one
// argument (else the error matches ErrMalformed), and makes each
// command's Fact as it goes, so that no Sender reads b again. b is the
// caller's and is not copied: it must not change until the submission
// is sent. New allocates the facts (a submission's encoders in this
// module record theirs in memory they reuse).
func New(b []byte, n int) (Cmds, error) {
	if n < 0 {
		return Cmds{}, ErrMalformed
	}
	if n == 0 {
		if len(b) != 0 {
			return Cmds{}, ErrMalformed
		}
		return Cmds{}, nil
	}
	facts := make([]cmds.Fact, 0, n)
	var keys []cmds.Span
	var spans []resp.Span
	var views [][]byte
	rest := b
	for range n {
		var size int
		var ok bool
		spans, size, ok = resp.SplitCommand(rest, spans[:0])
		if !ok || len(spans) == 0 {
			return Cmds{}, ErrMalformed
		}
		facts, keys, views = cmds.AppendFactOf(facts, keys, rest[:size], spans, views)
		rest = rest[size:]
	}
	if len(rest) != 0 {
		return Cmds{}, ErrMalformed
	}
	return Cmds{b: b, n: n, facts: facts}, nil
}

// Bytes returns the encoded commands. The caller must not modify them;
// they are valid while the submission is (until Send returns, for the
// Sender given it).
func (c Cmds) Bytes() []byte { return c.b }

// Len returns the number of commands.
func (c Cmds) Len() int { return c.n }

// Facts returns one fact per command, in order, or nil when they are not
// known (a submission of resp's counted commands made by conn.CmdsOf,
// whose facts its Sender reads from its bytes). The caller must not
// modify them.
func (c Cmds) Facts() []cmds.Fact { return c.facts }

// Plain reports whether the module's encoder found every command plain
// by its name (cmds.Plain) and left the facts out, for one of the
// module's own connections without hooks to send unread. A submission a
// Sender outside the module is given is never Plain.
func (c Cmds) Plain() bool { return c.plain && c.facts == nil }

// All yields each command of the submission, in order, with its index and
// its arguments (views of Bytes, valid while they are: copy what you
// keep). It is for code that answers or inspects submissions itself, as
// a fake Sender in tests does; it allocates the argument slice of each
// command. Bytes that are not Len whole commands end the iteration
// early.
func (c Cmds) All() iter.Seq2[int, [][]byte] {
	return func(yield func(int, [][]byte) bool) {
		b := c.b
		for i := range c.n {
			spans, size, ok := resp.SplitCommand(b, nil)
			if !ok {
				return
			}
			args := make([][]byte, 0, len(spans))
			for _, sp := range spans {
				args = append(args, sp.Of(b))
			}
			b = b[size:]
			if !yield(i, args) {
				return
			}
		}
	}
}

// A Handler receives the replies of one submission: Reply(i, v) for
// each command in order (v valid only during the call), then Done(err)
// exactly once, with nil after the last reply or with the error that
// ended the submission early. A Handler must not block. A panic in Reply
// or Done is recovered by the connection (see conn.PanicError), and
// every other submission still gets its own replies.
type Handler interface {
	// Reply is called with reply i (from 0) of the submission, in the
	// order the commands were sent. v is valid only during the call.
	Reply(i int, v resp.Value)
	// Done is called exactly once per submission: with nil after the
	// last Reply, or with the error that failed the connection (the
	// replies not delivered by then are lost).
	Done(err error)
	// Waits reports whether the submitter waits for Done on its own
	// goroutine right after submitting, so that the connection may read
	// the replies on that goroutine (saving two goroutine switches), and
	// so that a blocking command can be given a connection of its own.
	Waits() bool
}

// Sender submits commands: conn.Conn, conn.Client, cluster.Client and
// every client of this module built on them implement it, and so can any
// type outside the module (a fake, a wrapper).
type Sender interface {
	// Send queues the commands for writing; h gets their replies, in
	// order. When Send returns an error, nothing was sent and h is never
	// called. cmds' bytes are the caller's: copy them to keep them past
	// the return.
	Send(ctx context.Context, cmds Cmds, h Handler) error
}

func init() {
	subkey.Access = subkey.Funcs[Cmds]{
		Make: func(b []byte, n int, facts []cmds.Fact, plain bool, seen int32) Cmds {
			return Cmds{b: b, n: n, facts: facts, plain: plain, seen: seen}
		},
		Seen: func(c Cmds) int32 { return c.seen },
	}
}
