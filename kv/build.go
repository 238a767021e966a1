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
	if err != nil {
		return out, err
	}
	// The decoders of the common results run in a pooled state whose
	// method value is made once: a closure over out would escape (the
	// call may keep fn for the reader) and cost two allocations.
	switch d := any(dec).(type) {
	case func(resp.Value) (int64, error):
		return out, pooled(ctx, s, c, &intStates, d, &out)
	case func(resp.Value) (bool, error):
		return out, pooled(ctx, s, c, &boolStates, d, &out)
	case func(resp.Value) (string, error):
		return out, pooled(ctx, s, c, &stringStates, d, &out)
	case func(resp.Value) (float64, error):
		return out, pooled(ctx, s, c, &floatStates, d, &out)
	}
	return callFunc(ctx, s, c, dec)
}

// callFunc is Call for the other results, through a closure (its own
// out, so that Call's stays on the stack).
func callFunc[T any](ctx context.Context, s conn.Sender, c cmds.Command, dec func(resp.Value) (T, error)) (T, error) {
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
	err := c.Err()
	if err != nil {
		return out, ok, err
	}
	switch d := any(dec).(type) {
	case func(resp.Value) (string, bool, error):
		err = pooledNull(ctx, s, c, &nullStringStates, d, &out, &ok)
		return out, ok, err
	case func(resp.Value) (int64, bool, error):
		err = pooledNull(ctx, s, c, &nullIntStates, d, &out, &ok)
		return out, ok, err
	case func(resp.Value) (float64, bool, error):
		err = pooledNull(ctx, s, c, &nullFloatStates, d, &out, &ok)
		return out, ok, err
	}
	return callNullFunc(ctx, s, c, dec)
}

// callNullFunc is callFunc for CallNull.
func callNullFunc[T any](ctx context.Context, s conn.Sender, c cmds.Command, dec func(resp.Value) (T, bool, error)) (T, bool, error) {
	var out T
	var ok bool
	err := wire.DoCommand(ctx, s, c, func(v resp.Value) (err error) {
		out, ok, err = dec(v)
		return err
	})
	return out, ok, err
}

// state is a pooled Call of a U result: fn, its decode method value, is
// made once per state, so a call makes no closure.
type state[U any] struct {
	dec func(resp.Value) (U, error)
	out U
	fn  func(resp.Value) error
}

func (st *state[U]) decode(v resp.Value) (err error) {
	st.out, err = st.dec(v)
	return err
}

// nullState is state for a reply that can be nil.
type nullState[U any] struct {
	dec func(resp.Value) (U, bool, error)
	out U
	ok  bool
	fn  func(resp.Value) error
}

func (st *nullState[U]) decode(v resp.Value) (err error) {
	st.out, st.ok, err = st.dec(v)
	return err
}

func statePool[U any]() sync.Pool {
	return sync.Pool{New: func() any { st := new(state[U]); st.fn = st.decode; return st }}
}

func nullStatePool[U any]() sync.Pool {
	return sync.Pool{New: func() any { st := new(nullState[U]); st.fn = st.decode; return st }}
}

var (
	intStates        = statePool[int64]()
	boolStates       = statePool[bool]()
	stringStates     = statePool[string]()
	floatStates      = statePool[float64]()
	nullStringStates = nullStatePool[string]()
	nullIntStates    = nullStatePool[int64]()
	nullFloatStates  = nullStatePool[float64]()
)

// pooled runs c with dec in a state from pool, storing the result in
// out, a *U by Call's type switch. The state goes back to the pool once
// DoCommand has returned: its fn is not called after (an abandoned
// call's late reply is dropped undecoded).
func pooled[T, U any](ctx context.Context, s conn.Sender, c cmds.Command, pool *sync.Pool, dec func(resp.Value) (U, error), out *T) error {
	st := pool.Get().(*state[U])
	st.dec = dec
	err := wire.DoCommand(ctx, s, c, st.fn)
	if p, ok := any(out).(*U); ok {
		*p = st.out
	}
	var zero U
	st.dec, st.out = nil, zero
	pool.Put(st)
	return err
}

// pooledNull is pooled for CallNull.
func pooledNull[T, U any](ctx context.Context, s conn.Sender, c cmds.Command, pool *sync.Pool, dec func(resp.Value) (U, bool, error), out *T, ok *bool) error {
	st := pool.Get().(*nullState[U])
	st.dec = dec
	err := wire.DoCommand(ctx, s, c, st.fn)
	if p, is := any(out).(*U); is {
		*p, *ok = st.out, st.ok
	}
	var zero U
	st.dec, st.out, st.ok = nil, zero, false
	pool.Put(st)
	return err
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
