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
func (b *Batch) AddCommand(c cmds.Command) int { return int(b.add(c, byDec).i) }

// slot is where a handle's command is: the batch's generation once it
// is in (adding may move it on, in a copy) and its index; and how its
// reply is decoded, for the handles of this file's methods (a kind:
// decoded by a direct call, decode), or 0 for Decode's (through its
// dec).
type slot struct {
	gen  uint64
	i    int32
	kind kind
}

// kind names the decoder of a handle made by a method of Batch.
type kind uint8

const (
	byDec kind = iota // Decode's dec
	kInt
	kFloat
	kBool
	kOK
	kStatus
	kString
	kIntOrNil
	kFloatOrNil
)

// add is AddCommand returning the handle's slot: one result, so that
// Decode stays within the inliner's budget and Int, String, … are one
// call, as a raw Add is. The command is looked at once (Encoded).
func (b *Batch) add(c cmds.Command, k kind) slot {
	b.own()
	if b.cb != nil && owner(c) != b.cb {
		b.unlend() // c is another Builder's: it goes where b.cb builds
	}
	if b.lean && b.facts.Len() == 0 && c.Kind()&cmds.Guarded == 0 {
		// For a Sender that reads no facts: like a plain raw command.
		if _, err := c.AppendTo(&b.cmds); err != nil {
			return b.refuse(err, k)
		}
		return slot{b.gen, int32(b.cmds.Len() - 1), k}
	}
	b.fast = nil // facts from here on (Add's eager path)
	b.catchUp()
	if _, err := c.AppendTo(&b.cmds); err != nil {
		return b.refuse(err, k)
	}
	b.facts.Command(c)
	return slot{b.gen, int32(b.cmds.Len() - 1), k}
}

// refuse notes err, the Err of a command built wrong, as the batch's
// (the first one's: Exec returns it), for a handle of kind k.
func (b *Batch) refuse(err error, k kind) slot {
	if b.bad == nil {
		b.bad = err
	}
	return slot{b.gen, -1, k}
}

// ready returns the reply of a handle's slot when it is there, the
// common case (a reply of this generation's Exec, which returned nil),
// else nil: a pointer, so that the decoders read it in place.
func (b *Batch) ready(s slot) *resp.Value {
	if b != nil && s.gen == b.gen && b.done && b.self == b {
		if r := b.col.Replies(); uint(s.i) < uint(len(r)) {
			return &r[s.i]
		}
	}
	return nil
}

// replyErr is why a handle of generation gen has no reply i (ready
// found none).
func (b *Batch) replyErr(gen uint64, i int) error {
	switch {
	case b == nil:
		return ErrNotExecuted
	case b.self != nil && b.self != b:
		// A Batch copied over the handle's: it holds another's replies.
		b.adopt()
		return ErrCopied
	case gen != b.gen:
		return ErrStale
	case i < 0 && b.bad != nil:
		return b.bad // built wrong: never in the batch
	case b.execErr != nil:
		return b.execErr
	}
	// Not executed yet, or queued after the Exec whose replies these are.
	return ErrNotExecuted
}

// decode reads *v with the decoder of kind k into *out, a pointer to
// the handle's T (its method gave the handle that T): a direct call and
// the common replies read in place, without copying the reply.
func decode(k kind, v *resp.Value, out any) (ok bool, err error) {
	switch k {
	case kInt:
		p := out.(*int64)
		if v.Type == resp.Integer {
			*p = v.Int
			return true, nil
		}
		*p, err = cmds.Int(*v)
	case kFloat:
		*out.(*float64), err = cmds.Float(*v)
	case kBool:
		p := out.(*bool)
		if v.Type == resp.Integer || v.Type == resp.Boolean {
			*p = v.Int != 0
			return true, nil
		}
		*p, err = cmds.Bool(*v)
	case kOK:
		p := out.(*bool)
		if v.Type == resp.SimpleString && string(v.Str) == "OK" {
			*p = true
			return true, nil
		}
		*p, err = cmds.OKOrNil(*v)
	case kStatus:
		*out.(*string), err = cmds.Status(*v)
	case kString:
		*out.(*string), ok, err = cmds.String(*v)
		return ok, err
	case kIntOrNil:
		*out.(*int64), ok, err = cmds.IntOrNil(*v)
		return ok, err
	case kFloatOrNil:
		*out.(*float64), ok, err = cmds.FloatOrNil(*v)
		return ok, err
	}
	return err == nil, err
}

// Reply is the handle of a queued command whose reply decodes to a T.
type Reply[T any] struct {
	b *Batch
	slot
	dec func(resp.Value) (T, error) // Decode's; nil for a kind's
}

// Value returns the decoded reply of the last Exec: the server's error
// reply as a *resp.ServerError, the error of a failed Exec, or one
// matching ErrNotExecuted, ErrStale or ErrCopied.
func (r Reply[T]) Value() (v T, err error) {
	p := r.b.ready(r.slot)
	switch {
	case p == nil:
		return v, r.b.replyErr(r.gen, int(r.i))
	case r.dec != nil:
		return r.dec(*p)
	}
	_, err = decode(r.kind, p, &v)
	return v, err
}

// Index returns the command's index in the batch, for Reply and Err; -1
// for a command built wrong, which is not in the batch.
func (r Reply[T]) Index() int { return int(r.i) }

// NullReply is the handle of a queued command whose reply may be nil.
type NullReply[T any] struct {
	b *Batch
	slot
	dec func(resp.Value) (T, bool, error) // DecodeNull's; nil for a kind's
}

// Value returns the decoded reply of the last Exec; ok is false when the
// server said nil. The errors are Reply.Value's.
func (r NullReply[T]) Value() (v T, ok bool, err error) {
	p := r.b.ready(r.slot)
	switch {
	case p == nil:
		return v, false, r.b.replyErr(r.gen, int(r.i))
	case r.dec != nil:
		return r.dec(*p)
	}
	ok, err = decode(r.kind, p, &v)
	return v, ok, err
}

// Index returns the command's index in the batch, for Reply and Err; -1
// for a command built wrong, which is not in the batch.
func (r NullReply[T]) Index() int { return int(r.i) }

// Decode appends c and returns a handle whose Value decodes its reply
// with dec (one of package cmds' decoders, or one of the caller's).
// The methods named after their result (Int, OK, Status, …) decode by a
// direct call, not through a func value.
func Decode[T any](b *Batch, c cmds.Command, dec func(resp.Value) (T, error)) Reply[T] {
	return Reply[T]{b: b, slot: b.add(c, byDec), dec: dec}
}

// DecodeNull is Decode for a reply that may be nil.
func DecodeNull[T any](b *Batch, c cmds.Command, dec func(resp.Value) (T, bool, error)) NullReply[T] {
	return NullReply[T]{b: b, slot: b.add(c, byDec), dec: dec}
}

// Int appends c, whose reply is an integer (INCR, DEL, LLEN, …), read
// as cmds.Int reads it.
func (b *Batch) Int(c cmds.Command) Reply[int64] { return Reply[int64]{b: b, slot: b.add(c, kInt)} }

// Float appends c, whose reply is a number (INCRBYFLOAT, ZINCRBY, …),
// read as cmds.Float reads it.
func (b *Batch) Float(c cmds.Command) Reply[float64] {
	return Reply[float64]{b: b, slot: b.add(c, kFloat)}
}

// Bool appends c, whose reply is a boolean or 0/1 (EXPIRE, HEXISTS, …),
// read as cmds.Bool reads it.
func (b *Batch) Bool(c cmds.Command) Reply[bool] { return Reply[bool]{b: b, slot: b.add(c, kBool)} }

// OK appends c, whose reply is OK or nil (SET, SET … NX): Value is true
// for OK, false for nil (cmds.OKOrNil).
func (b *Batch) OK(c cmds.Command) Reply[bool] { return Reply[bool]{b: b, slot: b.add(c, kOK)} }

// Status appends c, whose reply is a status (PING's PONG, TYPE's
// "string"), read as cmds.Status reads it: the common ones without an
// allocation.
func (b *Batch) Status(c cmds.Command) Reply[string] {
	return Reply[string]{b: b, slot: b.add(c, kStatus)}
}

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

// String appends c, whose reply is a string or nil (GET, HGET, LPOP, …),
// read as cmds.String reads it.
func (b *Batch) String(c cmds.Command) NullReply[string] {
	return NullReply[string]{b: b, slot: b.add(c, kString)}
}

// IntOrNil appends c, whose reply is an integer or nil (ZRANK).
func (b *Batch) IntOrNil(c cmds.Command) NullReply[int64] {
	return NullReply[int64]{b: b, slot: b.add(c, kIntOrNil)}
}

// FloatOrNil appends c, whose reply is a number or nil (ZSCORE).
func (b *Batch) FloatOrNil(c cmds.Command) NullReply[float64] {
	return NullReply[float64]{b: b, slot: b.add(c, kFloatOrNil)}
}
