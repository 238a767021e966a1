package conn

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"

	"github.com/echomq/echomq-go/internal/dial"
	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/resp"
)

// PanicError is a panic of a user's function that a connection called
// (a Hook's, OnPush, Dialer, a Handler's), recovered: a panic there is the user's
// bug, but it runs on the goroutines that send and read, where it would
// leave the connection's roles held (every later call hanging) or take
// the process down. What becomes of it depends on the function:
//
//   - BeforeCommand, BeforePipeline: the submission is refused before
//     anything is sent, and the call returns the *PanicError (the other
//     hooks' Before functions still run, and every hook's After
//     functions are called with it, as for any refusal).
//   - AfterCommand, AfterPipeline: the other hooks still run and the
//     connection goes on; the call, whose command did run, returns the
//     *PanicError instead of its reply. When the call had ended with an
//     error of its own (a fault, a refusal), that error is returned and
//     the panic is logged to Options.Logger.
//   - OnPush: the push is dropped, the connection reads on, and the
//     panic is logged to Options.Logger.
//   - Dialer: the dial fails with the *PanicError (a Client redials
//     after its backoff, as after any failed dial).
//   - A Handler's Reply (see Handler), on whichever goroutine reads: the
//     frame it was given had been read whole, so the connection stays in
//     step with its replies and is not broken. The rest of that
//     submission's replies are read and dropped, its Done is then called
//     with the *PanicError ("Handler.Reply"; "Stream.ReplyFunc" for a
//     pipeline.Stream's ReplyFunc, whose stream then fails with it), and
//     every other submission gets its own replies, in order.
//   - A Handler's Done: the submission had ended; the panic is logged
//     ("Handler.Done"), and a caller reading its own replies returns.
//
// The recover costs one defer per read session (each time the reader
// goroutine or a caller takes the reader role), none per reply. DoFunc's
// fn is not among these: it runs on the caller's goroutine once the
// connection is done with the reply, holding no role or lock, so its
// panic is the caller's, as that of any function it calls, and the
// connection goes on.
//
// A pubsub.Subscription treats the hooks of its own commands the same
// way (see its package doc).
type PanicError struct {
	// Func names the function that panicked: "BeforeCommand",
	// "AfterCommand", "BeforePipeline", "AfterPipeline", "OnPush",
	// "Dialer", "Handler.Reply", "Handler.Done" or "Stream.ReplyFunc".
	Func string
	// Value is what it panicked with.
	Value any
	// Stack is the goroutine's stack at the panic.
	Stack []byte
}

// Error describes the panic.
func (e *PanicError) Error() string { return fmt.Sprintf("conn: %s panicked: %v", e.Func, e.Value) }

// Unwrap returns the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// recovered is the *PanicError of r, a value recover returned in fn.
func recovered(fn string, r any) *PanicError {
	return &PanicError{Func: fn, Value: r, Stack: debug.Stack()}
}

// logPanic reports p, which no call returns, to log (nil:
// slog.Default()).
func logPanic(log *slog.Logger, p *PanicError) {
	if log == nil {
		log = slog.Default()
	}
	log.LogAttrs(context.Background(), slog.LevelError, "conn: recovered a panic",
		slog.String("func", p.Func), slog.Any("value", p.Value), slog.String("stack", string(p.Stack)))
}

// sunk stands, on the connection, for a submission whose Handler
// panicked in Reply: the rest of its replies are read and dropped, and
// the Handler's Done is then called with the *PanicError, even when the
// connection fails before those replies come: the panic came first.
type sunk struct {
	h   wire.Handler
	p   *PanicError
	log *slog.Logger
}

func (s *sunk) Reply(int, resp.Value) {}
func (s *sunk) Waits() bool           { return false }
func (s *sunk) Done(error)            { endWith(s.log, s.h, s.p) }

// endWith calls h.Done(err) off the hot path (a panicked Handler's, a
// failed connection's submissions), recovering and logging its panic so
// that every other submission is still ended.
func endWith(log *slog.Logger, h wire.Handler, err error) {
	defer func() {
		if r := recover(); r != nil {
			logPanic(log, recovered(funcOf(h, "Handler.Done"), r))
		}
	}()
	h.Done(err)
}

// funcOf names the function of h that panicked: the one h names itself
// (a Stream's ReplyFunc), else method.
func funcOf(h wire.Handler, method string) string {
	if f := wire.PanicFunc(h); f != "" {
		return f
	}
	return method
}

// onPush calls OnPush with v, recovering its panic (logged: no call is
// its).
func (c *Conn) onPush(v resp.Value) {
	defer func() {
		if r := recover(); r != nil {
			logPanic(c.opts.Logger, recovered("OnPush", r))
		}
	}()
	c.opts.OnPush(v)
}

func init() {
	dial.PanicOf = func(fn string, r any) error { return recovered(fn, r) }
}
