package kv

import (
	"context"
	"sync"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/resp"
)

// Every helper builds its command with a pooled
// cmds.Builder and read the reply with one of cmds' decoders (or one of
// this package's), on the DoFunc path: nothing allocates beyond the
// result.

var builders = sync.Pool{New: func() any { return new(kb) }}

// kb is a pooled Builder with the scratch of the helpers' arguments:
// every helper encodes with package cmds (one encoder behind kv), its
// values given to the builders as text (see text) and its pairs in the
// slices the builders take.
type kb struct {
	cmds.Builder
	text []byte // numbers formatted, viewed by the strings given to the builder
	strs []string
	kvs  []cmds.KeyValue
	fvs  []cmds.FieldValue
	sms  []cmds.ScoreMember
}

// builder takes a Builder from the pool; call, callOK and do give it
// back.
func builder() *kb { return builders.Get().(*kb) }

// put gives k back to the pool, dropping its views of the caller's
// values.
func (k *kb) put() {
	if len(k.strs)|len(k.kvs)|len(k.fvs)|len(k.sms) != 0 {
		clear(k.strs)
		clear(k.kvs)
		clear(k.fvs)
		clear(k.sms)
		k.strs, k.kvs, k.fvs, k.sms = k.strs[:0], k.kvs[:0], k.fvs[:0], k.sms[:0]
	}
	k.text = k.text[:0]
	builders.Put(k)
}

// do sends c, built with k, and hands its reply to fn (nil: none is
// read) on the caller's goroutine while it is valid; a server error reply
// is returned as a *resp.ServerError. It gives k back and allocates
// nothing: fn does not escape.
func do(ctx context.Context, s conn.Sender, k *kb, c cmds.Command, fn func(resp.Value) error) error {
	err := wire.DoCommand(ctx, s, c, fn)
	k.put()
	return err
}

// Call sends c, a command built with package cmds, over s and returns
// its reply read by dec, one of cmds' decoders (cmds.Int, cmds.Float,
// cmds.Bool, cmds.Strings, cmds.StringMap, cmds.Scored, …: the one Info.Reply
// names): the one call for any command, in one line, with its typed result.
//
//	var b cmds.Builder // one per goroutine; it reuses its memory
//	n, err := kv.Call(ctx, c, b.Incrby("hits", 5).Build(), cmds.Int)
//
// A reply that can be nil goes through CallNull. In a pipeline the same
// command and decoder make a typed handle: pipeline.Decode(&batch, cmd,
// cmds.Int), or its short names (batch.Int(cmd)). A command built wrong
// (its Err, matching cmds.ErrMissing, ErrAlone or ErrStale) is refused
// before anything is sent; a server error reply is returned as a
// *resp.ServerError. Call allocates nothing beyond what dec returns, on a
// *conn.Conn, *conn.Client or cluster.Client as through the interface.
func Call[T any](ctx context.Context, s conn.Sender, c cmds.Command, dec func(resp.Value) (T, error)) (T, error) {
	// The closure stays on the stack: DoCommand does not keep fn.
	var out T
	err := wire.DoCommand(ctx, s, c, func(v resp.Value) (err error) {
		out, err = dec(v)
		return err
	})
	return out, err
}

// CallNull is Call for a reply that can be nil (GET of a missing key,
// ZSCORE of a missing member): ok is false when the server said nil,
// never an error. dec is one of cmds' decoders that report it
// (cmds.String, cmds.IntOrNil, cmds.FloatOrNil, cmds.OKOrNil, …).
//
//	v, ok, err := kv.CallNull(ctx, c, b.Get("greeting").Build(), cmds.String)
func CallNull[T any](ctx context.Context, s conn.Sender, c cmds.Command, dec func(resp.Value) (T, bool, error)) (T, bool, error) {
	var out T
	var ok bool
	err := wire.DoCommand(ctx, s, c, func(v resp.Value) (err error) {
		out, ok, err = dec(v)
		return err
	})
	return out, ok, err
}

// call is Call for a command built with b, a pooled Builder, which it
// gives back.
func call[T any](ctx context.Context, s conn.Sender, b *kb, c cmds.Command, dec func(resp.Value) (T, error)) (T, error) {
	out, err := Call(ctx, s, c, dec)
	b.put()
	return out, err
}

// callOK is CallNull for a command built with b, a pooled Builder.
func callOK[T any](ctx context.Context, s conn.Sender, b *kb, c cmds.Command, dec func(resp.Value) (T, bool, error)) (T, bool, error) {
	out, ok, err := CallNull(ctx, s, c, dec)
	b.put()
	return out, ok, err
}
