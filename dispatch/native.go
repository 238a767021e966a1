package dispatch

import (
	"context"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/resp"
)

// Native is the executor for a server with the EchoMQ module: it sends
// each call as the module's command, "EMQ.<NAME> numkeys keys… args…"
// (Script.NativeCommand), in place of "EVALSHA <sha> numkeys keys…
// args…". The replies are the scripts' replies. Nothing is ever loaded.
// It is safe for concurrent use.
type Native struct {
	s     conn.Sender
	plain bool // s reads no facts of a plain call (wire.WantsFacts)
}

// NewNative returns a native executor over s.
func NewNative(s conn.Sender) *Native { return &Native{s: s, plain: !wire.WantsFacts(s)} }

// Eval sends s's native command with a's keys and args. It allocates
// nothing in steady state.
func (x *Native) Eval(ctx context.Context, s *Script, a *Args, fn func(resp.Value) error) error {
	return x.run(s, a, func(cmd resp.Cmd, hdr uint32) error {
		if x.plain {
			return wire.DoFunc(ctx, x.s, cmd, fn) // read only when its name is not plain
		}
		return wire.DoFuncMade(ctx, x.s, cmd, func(keys []cmds.Span) (cmds.Fact, []cmds.Span) {
			return callFact(s, true, a, hdr, keys)
		}, fn)
	})
}

// EvalInReply is Eval with fn run as the reply is read when ctx is marked
// by the module's wire.InReply (see Scripted.EvalInReply).
func (x *Native) EvalInReply(ctx context.Context, s *Script, a *Args, fn func(resp.Value) error) error {
	return x.run(s, a, func(cmd resp.Cmd, hdr uint32) error {
		if x.plain {
			return wire.DoFuncInReply(ctx, x.s, cmd, fn)
		}
		return wire.DoFuncMadeInReply(ctx, x.s, cmd, func(keys []cmds.Span) (cmds.Fact, []cmds.Span) {
			return callFact(s, true, a, hdr, keys)
		}, fn)
	})
}

// run encodes s's native command with a and sends it with send (given
// the call's header length, for its fact).
func (x *Native) run(s *Script, a *Args, send func(cmd resp.Cmd, hdr uint32) error) error {
	buf := bufPool.Get().(*cmdBuf)
	cmd, hdr := buildCall(buf.b, &s.nativeHead, a)
	buf.b = cmd.Bytes()
	err := send(cmd, hdr)
	if cap(buf.b) <= 64<<10 {
		bufPool.Put(buf)
	}
	return err
}

// EvalBatch sends every call in b as its native command, in one pipeline.
// It returns nil when every reply arrived (some may be script errors: see
// Batch.Err), or the fault or ctx's error, after which there are no
// replies.
func (x *Native) EvalBatch(ctx context.Context, b *Batch) error {
	if err := b.ready(); err != nil {
		return err
	}
	if len(b.calls) == 0 {
		return nil
	}
	b.begin()
	return b.roundTrip(ctx, x.s, true, x.plain, nil)
}
