package pubsub

import (
	"context"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/resp"
)

// hooksOf gathers the hooks a subscription's own commands (SUBSCRIBE,
// UNSUBSCRIBE, their P and S forms, the health check's PING) go
// through: o.Hooks in order, then o.Observer's, as a conn.Client runs
// them. Nil when there are none: then nothing is spent on them.
func hooksOf(o conn.Options) []conn.Hook {
	hs := append([]conn.Hook(nil), o.Hooks...)
	if o.Observer != nil {
		hs = append(hs, conn.ObserverHook(o.Observer))
	}
	return hs
}

// before starts op's command for the hooks, as it is written: raw is the
// command as sent.
func (l *link) before(ctx context.Context, o *op, name string, raw []byte) {
	if len(l.hooks) == 0 {
		return
	}
	o.info, o.start = conn.CommandInfo{Name: name}, time.Now()
	for _, h := range l.hooks {
		if h.BeforeCommand != nil {
			if c := h.BeforeCommand(ctx, o.info, conn.NewRawCommand(raw, nil)); c != nil {
				ctx = c
			}
		}
	}
	o.ctx = ctx
}

// after ends op's command for the hooks, once: with the reply that
// ended it (the last confirmation owed, or the reply; valid only during
// the call) and its server error, or with the error that ended it
// without one (the link's fault).
func (l *link) after(o *op, reply resp.Value, err error) {
	if len(l.hooks) == 0 {
		return
	}
	took := time.Since(o.start)
	for _, h := range l.hooks {
		if h.AfterCommand != nil {
			h.AfterCommand(o.ctx, o.info, reply, took, err)
		}
	}
}
