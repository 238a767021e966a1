package pipeline

import (
	"errors"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/resp"
)

// Typed commands: a cmds.Command is queued with the method named after
// the Go value its reply decodes to, which returns a handle; after Exec
// the handle's Value is the decoded reply, the same under RESP2 and RESP3:
//
//	var b pipeline.Batch
//	var cb cmds.Builder
//	n := b.Int(cb.Incr("visits").Build())
//	name := b.String(cb.Get("user:1").Build())
//	if err := b.Exec(ctx, c); err != nil { … }
//	visits, err := n.Value()
//	v, ok, err := name.Value() // ok is false for a missing key
//
// A handle is a small value (no allocation); queueing a built command
// copies its bytes, so one cmds.Builder builds every command of a batch.

// ErrNotExecuted is matched by the error of a handle's Value read before
// the batch's Exec, or read after an Exec that ran before the handle's
// command was queued (the batch was not Reset: its next Exec sends it).
var ErrNotExecuted = errors.New("pipeline: reply read before Exec")

// ErrStale is matched by the error of a handle's Value when the batch was
// Reset after the handle was made: its command is no longer in the batch.
var ErrStale = errors.New("pipeline: reply handle from before Reset")

// AddCommand appends a typed command and returns its index, for Reply and
// Err. A command built wrong (its Err is not nil: a required argument
// missing, a NaN, a stale Command) is not appended: its index is -1, and
// it makes Exec return that error and send nothing until Reset.
func (b *Batch) AddCommand(c cmds.Command) int { return int(b.add(c).i) }

// slot is where a handle's command is: the batch's generation once it
// is in (adding may move it on, in a copy) and its index.
type slot struct {
	gen uint64
	i   int32
}

// add is AddCommand returning the handle's slot: one result, so that
// Decode stays within the inliner's budget and Int, String, … are one
// call, as a raw Add is.
func (b *Batch) add(c cmds.Command) slot {
	b.own()
	if err := c.Err(); err != nil {
		if b.bad == nil {
			b.bad = err
		}
		return slot{b.gen, -1}
	}
	if b.lean && b.facts.Len() == 0 && c.Kind()&cmds.Guarded == 0 {
		// For a Sender that reads no facts: like a plain raw command.
		b.cmds.AddCmd(c.Cmd())
		return slot{b.gen, int32(b.cmds.Len() - 1)}
	}
	b.fast = nil // facts from here on (Add's eager path)
	b.catchUp()
	b.cmds.AddCmd(c.Cmd())
	b.facts.Command(c)
	return slot{b.gen, int32(b.cmds.Len() - 1)}
}

// reply returns reply i for a handle of generation gen.
func (b *Batch) reply(gen uint64, i int) (resp.Value, error) {
	if b != nil && gen == b.gen && b.done && b.self == b {
		// The common case, the replies of this generation's Exec (done
		// means it returned nil).
		if r := b.col.Replies(); uint(i) < uint(len(r)) {
			return r[i], nil
		}
	}
	switch {
	case b == nil:
		return resp.Value{}, ErrNotExecuted
	case b.self != nil && b.self != b:
		// A Batch copied over the handle's: it holds another's replies.
		b.adopt()
		return resp.Value{}, ErrCopied
	case gen != b.gen:
		return resp.Value{}, ErrStale
	case i < 0 && b.bad != nil:
		return resp.Value{}, b.bad // built wrong: never in the batch
	case b.execErr != nil:
		return resp.Value{}, b.execErr
	}
	// Not executed yet, or queued after the Exec whose replies these are.
	return resp.Value{}, ErrNotExecuted
}

// Reply is the handle of a queued command whose reply decodes to a T.
type Reply[T any] struct {
	b *Batch
	slot
	dec func(resp.Value) (T, error)
}

// Value returns the decoded reply of the last Exec: the server's error
// reply as a *resp.ServerError, the error of a failed Exec, or one
// matching ErrNotExecuted, ErrStale or ErrCopied.
func (r Reply[T]) Value() (T, error) {
	v, err := r.b.reply(r.gen, int(r.i))
	if err != nil {
		var zero T
		return zero, err
	}
	return r.dec(v)
}

// Index returns the command's index in the batch, for Reply and Err; -1
// for a command built wrong, which is not in the batch.
func (r Reply[T]) Index() int { return int(r.i) }

// NullReply is the handle of a queued command whose reply may be nil.
type NullReply[T any] struct {
	b *Batch
	slot
	dec func(resp.Value) (T, bool, error)
}

// Value returns the decoded reply of the last Exec; ok is false when the
// server said nil. The errors are Reply.Value's.
func (r NullReply[T]) Value() (v T, ok bool, err error) {
	rv, err := r.b.reply(r.gen, int(r.i))
	if err != nil {
		return v, false, err
	}
	return r.dec(rv)
}

// Index returns the command's index in the batch, for Reply and Err; -1
// for a command built wrong, which is not in the batch.
func (r NullReply[T]) Index() int { return int(r.i) }

// Decode appends c and returns a handle whose Value decodes its reply
// with dec (one of package cmds' decoders, or one of the caller's).
func Decode[T any](b *Batch, c cmds.Command, dec func(resp.Value) (T, error)) Reply[T] {
	return Reply[T]{b: b, slot: b.add(c), dec: dec}
}

// DecodeNull is Decode for a reply that may be nil.
func DecodeNull[T any](b *Batch, c cmds.Command, dec func(resp.Value) (T, bool, error)) NullReply[T] {
	return NullReply[T]{b: b, slot: b.add(c), dec: dec}
}

// Int appends c, whose reply is an integer (INCR, DEL, LLEN, …).
func (b *Batch) Int(c cmds.Command) Reply[int64] { return Decode(b, c, cmds.Int) }

// Float appends c, whose reply is a number (INCRBYFLOAT, ZINCRBY, …).
func (b *Batch) Float(c cmds.Command) Reply[float64] { return Decode(b, c, cmds.Float) }

// Bool appends c, whose reply is a boolean or 0/1 (EXPIRE, HEXISTS, …).
func (b *Batch) Bool(c cmds.Command) Reply[bool] { return Decode(b, c, cmds.Bool) }

// OK appends c, whose reply is OK or nil (SET, SET … NX): Value is true
// for OK, false for nil.
func (b *Batch) OK(c cmds.Command) Reply[bool] { return Decode(b, c, cmds.OKOrNil) }

// Strings appends c, whose reply is a list of strings (LRANGE, SMEMBERS,
// ZRANGE, …).
func (b *Batch) Strings(c cmds.Command) Reply[[]string] { return Decode(b, c, cmds.Strings) }

// StringMap appends c, whose reply is a map of strings (HGETALL).
func (b *Batch) StringMap(c cmds.Command) Reply[map[string]string] {
	return Decode(b, c, cmds.StringMap)
}

// Scored appends c, whose reply is members with scores (ZRANGE …
// WITHSCORES, ZPOPMIN, …).
func (b *Batch) Scored(c cmds.Command) Reply[[]cmds.Z] { return Decode(b, c, cmds.Scored) }

// String appends c, whose reply is a string or nil (GET, HGET, LPOP, …).
func (b *Batch) String(c cmds.Command) NullReply[string] { return DecodeNull(b, c, cmds.String) }

// IntOrNil appends c, whose reply is an integer or nil (ZRANK).
func (b *Batch) IntOrNil(c cmds.Command) NullReply[int64] { return DecodeNull(b, c, cmds.IntOrNil) }

// FloatOrNil appends c, whose reply is a number or nil (ZSCORE).
func (b *Batch) FloatOrNil(c cmds.Command) NullReply[float64] {
	return DecodeNull(b, c, cmds.FloatOrNil)
}
