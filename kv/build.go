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

// call sends c, built with b, and decodes its reply with dec. A command
// built wrong is refused with its error before anything is sent.
func call[T any](ctx context.Context, s conn.Sender, b *cmds.Builder, c cmds.Command, dec func(resp.Value) (T, error)) (T, error) {
	var out T
	err := c.Err()
	if err == nil {
		err = wire.DoCommand(ctx, s, c, func(v resp.Value) (err error) {
			out, err = dec(v)
			return err
		})
	}
	builders.Put(b)
	return out, err
}

// callOK is call for a reply that may be nil.
func callOK[T any](ctx context.Context, s conn.Sender, b *cmds.Builder, c cmds.Command, dec func(resp.Value) (T, bool, error)) (T, bool, error) {
	var out T
	var ok bool
	err := c.Err()
	if err == nil {
		err = wire.DoCommand(ctx, s, c, func(v resp.Value) (err error) {
			out, ok, err = dec(v)
			return err
		})
	}
	builders.Put(b)
	return out, ok, err
}
