package kv

import (
	"context"
	"sync"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/resp"
)

// The helpers added over package cmds build their command with a pooled
// cmds.Builder and read the reply with one of cmds' decoders (or one of
// this package's), on the DoFunc path: nothing allocates beyond the
// result.

var builders = sync.Pool{New: func() any { return new(cmds.Builder) }}

// builder takes a Builder from the pool; call gives it back.
func builder() *cmds.Builder { return builders.Get().(*cmds.Builder) }

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
	var out T
	err := c.Err()
	if err == nil {
		err = wire.DoCommand(ctx, s, c, func(v resp.Value) (err error) {
			out, err = dec(v)
			return err
		})
	}
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
	err := c.Err()
	if err == nil {
		err = wire.DoCommand(ctx, s, c, func(v resp.Value) (err error) {
			out, ok, err = dec(v)
			return err
		})
	}
	return out, ok, err
}

// call is Call for a command built with b, a pooled Builder, which it
// gives back.
func call[T any](ctx context.Context, s conn.Sender, b *cmds.Builder, c cmds.Command, dec func(resp.Value) (T, error)) (T, error) {
	out, err := Call(ctx, s, c, dec)
	builders.Put(b)
	return out, err
}

// callOK is CallNull for a command built with b, a pooled Builder.
func callOK[T any](ctx context.Context, s conn.Sender, b *cmds.Builder, c cmds.Command, dec func(resp.Value) (T, bool, error)) (T, bool, error) {
	out, ok, err := CallNull(ctx, s, c, dec)
	builders.Put(b)
	return out, ok, err
}
