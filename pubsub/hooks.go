package pubsub

import (
	"context"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/resp"
)

// hooksOf gathers the hooks a subscription's own commands (SUBSCRIBE,
// UNSUBSCRIBE, their P and S forms) go through: o.Hooks in order, then
// o.Observer's, as a conn.Client runs them. Nil when there are none:
// then nothing is spent on them. The health check's PING is the
// subscription's housekeeping, which hooks do not see (as a
// conn.Client's).
func hooksOf(o conn.Options) []conn.Hook {
	hs := append([]conn.Hook(nil), o.Hooks...)
	if o.Observer != nil {
		hs = append(hs, conn.ObserverHook(o.Observer))
	}
	return hs
}

// before starts op's command for the hooks, as it is written: raw is the
// command as sent. It returns the panic of a BeforeCommand, recovered
// (the other hooks' still run): the caller then refuses the command.
func (l *link) before(ctx context.Context, o *op, name string, raw []byte) (p *conn.PanicError) {
	if len(l.hooks) == 0 || o.own {
		return nil
	}
	o.info, o.start = conn.CommandInfo{Name: name}, time.Now()
	for i := range l.hooks {
		if l.hooks[i].BeforeCommand != nil {
			ctx = l.beforeOne(&l.hooks[i], ctx, o, raw, &p)
		}
	}
	o.ctx = ctx
	return p
}

func (l *link) beforeOne(h *conn.Hook, ctx context.Context, o *op, raw []byte, p **conn.PanicError) (out context.Context) {
	defer l.recoverIn("BeforeCommand", p)
	out = ctx
	if c := h.BeforeCommand(ctx, o.info, conn.NewRawCommand(raw, nil)); c != nil {
		out = c
	}
	return out
}

// after ends op's command for the hooks, once: with the reply that
// ended it (the last confirmation owed, or the reply; valid only during
// the call) and its server error, or with the error that ended it
// without one (the link's fault). A panic of an AfterCommand is
// recovered and logged (Options.Logger): the command ran, and the
// subscription's state follows the server's replies, not the hooks.
func (l *link) after(o *op, reply resp.Value, err error) {
	if len(l.hooks) == 0 || o.own {
		return
	}
	took := time.Since(o.start)
	for i := range l.hooks {
		if l.hooks[i].AfterCommand != nil {
			l.afterOne(&l.hooks[i], o, reply, took, err)
		}
	}
}

func (l *link) afterOne(h *conn.Hook, o *op, reply resp.Value, took time.Duration, err error) {
	var p *conn.PanicError
	defer func() {
		if p != nil {
			l.logPanic(p)
		}
	}()
	defer l.recoverIn("AfterCommand", &p)
	h.AfterCommand(o.ctx, o.info, reply, took, err)
}

// recoverIn, deferred around a call of the hook function fn, recovers
// its panic into *p when it is the first, else logs it.
func (l *link) recoverIn(fn string, p **conn.PanicError) {
	r := recover()
	if r == nil {
		return
	}
	e := &conn.PanicError{Func: fn, Value: r, Stack: debug.Stack()}
	if *p == nil {
		*p = e
		return
	}
	l.logPanic(e)
}

// logPanic reports a recovered panic no call returns to the Logger.
func (l *link) logPanic(p *conn.PanicError) {
	log := l.log
	if log == nil {
		log = slog.Default()
	}
	log.LogAttrs(context.Background(), slog.LevelError, "pubsub: recovered a panic",
		slog.String("func", p.Func), slog.Any("value", p.Value), slog.String("stack", string(p.Stack)))
}
