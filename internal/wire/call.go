package wire

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/resp"
)

// call states, shared with the Collector.
const (
	waiting int32 = iota
	finished
	abandoned
	replying // an InReply call's fn runs in Reply: the caller can no longer abandon it
)

// call is a pooled Handler for one command whose caller waits for it. The
// reader retains the reply in the call's arena, so the caller reads it
// after the reader has moved on. A caller that gives up (its context ended)
// abandons the call; the reader then drops the late reply and recycles the
// call, so the connection stays in sync and nothing is shared.
type call struct {
	state atomic.Int32
	done  chan struct{}
	arena resp.Arena
	val   resp.Value
	err   error
	facts Facts // the command's, when it came without

	// An InReply call: fn runs in Reply on the reply as read, and what it
	// returned (or the server's error reply) is fnErr; a panic of fn is
	// caught there and raised again on the caller's goroutine.
	fn       func(resp.Value) error
	fnErr    error
	panicked any
}

var callPool = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 1)} }}

func getCall() *call {
	c := callPool.Get().(*call)
	c.state.Store(waiting)
	return c
}

func putCall(c *call) {
	c.arena.Reset()
	c.facts.Reset()
	c.val, c.err = resp.Value{}, nil
	c.fn, c.fnErr, c.panicked = nil, nil, nil
	callPool.Put(c)
}

// Reply keeps the reply unless the caller has gone; an InReply call
// decodes it with fn instead, unless the caller has gone.
func (c *call) Reply(_ int, v resp.Value) {
	if c.fn != nil {
		// From here on the caller cannot abandon the call (wait waits
		// for Done): fn writes into what the caller owns, and the caller
		// reads it only once woken.
		if c.state.CompareAndSwap(waiting, replying) {
			c.decode(v)
		}
		return
	}
	if c.state.Load() != abandoned {
		c.val = c.arena.Retain(v)
	}
}

// decode runs fn on v (a view of the connection's buffer, valid only
// now), or keeps v's server error; a panic of fn is kept for the caller.
func (c *call) decode(v resp.Value) {
	defer func() {
		if r := recover(); r != nil {
			c.panicked = r
		}
	}()
	if v.IsError() {
		c.fnErr = v.Err()
		return
	}
	c.fnErr = c.fn(v)
}

// Done wakes the caller, or recycles the call when the caller has gone.
func (c *call) Done(err error) {
	c.err = err
	if c.state.CompareAndSwap(waiting, finished) || c.state.CompareAndSwap(replying, finished) {
		c.done <- struct{}{}
		return
	}
	putCall(c)
}

// Waits is true: DoFunc waits for its call.
func (c *call) Waits() bool { return true }

// wait waits for the reply or the end of ctx. On ctx's end the call is
// abandoned: wait returns ctx.Err() and owned=false, and the caller must
// not touch the call again. Otherwise the caller owns it.
func (c *call) wait(ctx context.Context) (err error, owned bool) {
	select {
	case <-c.done:
		return c.err, true
	case <-ctx.Done():
		if c.state.CompareAndSwap(waiting, abandoned) {
			return ctx.Err(), false
		}
		<-c.done // the reply won the race: take it
		return c.err, true
	}
}

// DoFunc sends one command over s and waits for its reply. fn is called
// with the reply on the caller's goroutine; the reply is valid only during
// fn. A server error reply is returned as a *resp.ServerError and fn is
// not called. DoFunc allocates nothing in steady state.
//
// When ctx ends first, DoFunc returns ctx.Err() at once; the command stays
// queued and its late reply is read and dropped.
//
// The command's facts are read from its bytes here, once (a user's
// resp.Cmd, a raw Do), unless its name is plain (cmds.Plain) and s reads
// no facts of a Plain submission (WantsFacts): then it is sent Plain,
// without facts.
// DoCommand takes a builder's, known already.
func DoFunc(ctx context.Context, s Sender, cmd resp.Cmd, fn func(resp.Value) error) error {
	cl, w, err := prepare(s, cmd)
	if err != nil {
		return err
	}
	return cl.exchange(ctx, s, w, fn)
}

// prepare takes a pooled call and makes cmd's submission for DoFunc and
// DoFuncInReply.
func prepare(s Sender, cmd resp.Cmd) (*call, Cmds, error) {
	if err := cmd.Err(); err != nil {
		return nil, Cmds{}, err
	}
	b := cmd.Bytes()
	cl := getCall()
	if cmds.Plain(NameOf(b)) && !WantsFacts(s) {
		// Plain only for the module's own connections without hooks:
		// a Sender that reads facts (a cluster, a user's wrapper) gets
		// them, and is never handed a Plain Cmds.
		return cl, sub.Make(b, 1, nil, true, 0), nil
	}
	if err := cl.facts.Encoded(b, 1); err != nil {
		putCall(cl)
		return nil, Cmds{}, err
	}
	return cl, Make(b, 1, cl.facts.List()), nil
}

// DoFuncAs is DoFunc for a command whose Info the caller knows (nil: one
// the table does not know, as EMQ.*): its name is not looked up.
func DoFuncAs(ctx context.Context, s Sender, cmd resp.Cmd, in *cmds.Info, fn func(resp.Value) error) error {
	if err := cmd.Err(); err != nil {
		return err
	}
	cl := getCall()
	if err := cl.facts.EncodedAs(in, cmd.Bytes()); err != nil {
		putCall(cl)
		return err
	}
	return cl.exchange(ctx, s, Make(cmd.Bytes(), 1, cl.facts.List()), fn)
}

// DoFuncMade is DoFunc for a command whose encoder makes its fact (see
// Facts.Made): make is called once, before DoFuncMade sends.
func DoFuncMade(ctx context.Context, s Sender, cmd resp.Cmd, make func(keys []cmds.Span) (cmds.Fact, []cmds.Span), fn func(resp.Value) error) error {
	if err := cmd.Err(); err != nil {
		return err
	}
	cl := getCall()
	cl.facts.Made(make)
	return cl.exchange(ctx, s, Make(cmd.Bytes(), 1, cl.facts.List()), fn)
}

// DoFuncInReply is DoFunc run in the call's Reply when ctx is marked by
// InReply (else DoFunc's exchange): a function of its own, so that the
// fn of DoFunc and its kin, which they never keep, stays on its caller's
// stack (fn is kept here in the call for its Reply).
func DoFuncInReply(ctx context.Context, s Sender, cmd resp.Cmd, fn func(resp.Value) error) error {
	cl, w, err := prepare(s, cmd)
	if err != nil {
		return err
	}
	return cl.exchangeIn(ctx, s, w, fn)
}

// DoFuncMadeInReply is DoFuncMade as DoFuncInReply is DoFunc.
func DoFuncMadeInReply(ctx context.Context, s Sender, cmd resp.Cmd, make func(keys []cmds.Span) (cmds.Fact, []cmds.Span), fn func(resp.Value) error) error {
	if err := cmd.Err(); err != nil {
		return err
	}
	cl := getCall()
	cl.facts.Made(make)
	return cl.exchangeIn(ctx, s, Make(cmd.Bytes(), 1, cl.facts.List()), fn)
}

// DoCommand is DoFunc for a command built by package cmds, whose facts
// its builder knows: they go with it, unless the command is of no
// Guarded kind and s reads no facts of a Plain submission (WantsFacts).
func DoCommand(ctx context.Context, s Sender, c cmds.Command, fn func(resp.Value) error) error {
	if err := c.Err(); err != nil {
		return err
	}
	cl := getCall()
	var w Cmds
	if c.Kind()&cmds.Guarded == 0 && !WantsFacts(s) {
		w = sub.Make(c.Cmd().Bytes(), 1, nil, true, 0)
	} else {
		cl.facts.Command(c)
		w = Make(c.Cmd().Bytes(), 1, cl.facts.List())
	}
	return cl.exchange(ctx, s, w, fn)
}

// InReply returns ctx marked for DoFuncInReply and DoFuncMadeInReply
// (which dispatch's executors' EvalInReply call, and emq's worker round
// when IsInReply(ctx)): given it, they run fn in the call's Reply, on
// the goroutine that reads the reply (the caller's own when it leads the
// reading, else the connection's reader), on the reply as read, before
// the caller is woken. The reply is then decoded once, straight into
// fn's destination, instead of being copied into the call's arena first
// and decoded from there. Once fn has started the call can no longer be
// abandoned: a caller whose ctx ends meanwhile waits the few moments fn
// takes, and gets its result. A server error reply is the call's error,
// fn not called, as without the mark; a panic of fn is raised again on
// the caller's goroutine when it is woken.
//
// Only for a fn of this module's that decodes and nothing more: it must
// not block, nor send on any connection, for it holds up every reply
// behind its own. The marked ctx is otherwise ctx (Done, Err, Value and
// Deadline are ctx's); make it once, it allocates.
func InReply(ctx context.Context) context.Context { return &replyCtx{ctx} }

// replyCtx is a ctx marked by InReply.
type replyCtx struct{ context.Context }

// IsInReply reports whether ctx was marked by InReply.
func IsInReply(ctx context.Context) bool {
	_, in := ctx.(*replyCtx)
	return in
}

// exchange sends w with cl as its Handler, waits for the reply and
// recycles cl.
//
// Its send and wait are sendWait's, written out: a call less on the
// per-command path of DoFunc, DoCommand (kv.Call) and their kin.
func (cl *call) exchange(ctx context.Context, s Sender, w Cmds, fn func(resp.Value) error) error {
	if err := s.Send(ctx, w, cl); err != nil {
		putCall(cl)
		return err
	}
	err, owned := cl.wait(ctx)
	if !owned {
		return err
	}
	return cl.result(err, fn)
}

// result ends a call its caller owns, which ended with err: err, else
// the reply's server error, else what fn returns of the reply; cl is
// recycled.
func (cl *call) result(err error, fn func(resp.Value) error) error {
	if err == nil && cl.val.IsError() {
		err = cl.val.Err()
	} else if err == nil && fn != nil {
		err = fn(cl.val)
	}
	putCall(cl)
	return err
}

// exchangeIn is exchange with fn run in Reply when ctx is marked by
// InReply (a nil fn, or an unmarked ctx: exchange).
func (cl *call) exchangeIn(ctx context.Context, s Sender, w Cmds, fn func(resp.Value) error) error {
	if fn == nil || !IsInReply(ctx) {
		return cl.exchange(ctx, s, w, fn)
	}
	cl.fn = fn
	if held, err := cl.sendWait(ctx, s, w); !held {
		return err
	}
	err, p := cl.fnErr, cl.panicked
	putCall(cl)
	if p != nil {
		panic(p)
	}
	return err
}

// sendWait sends w with cl as its Handler and waits for its end: held
// reports that cl ended with its reply, for the caller to read and
// recycle; otherwise err is the call's end and cl is recycled (or left
// to its late reply, when ctx ended first).
func (cl *call) sendWait(ctx context.Context, s Sender, w Cmds) (held bool, err error) {
	if err := s.Send(ctx, w, cl); err != nil {
		putCall(cl)
		return false, err
	}
	err, owned := cl.wait(ctx)
	if !owned {
		return false, err
	}
	if err != nil {
		putCall(cl)
		return false, err
	}
	return true, nil
}

// DoInt sends a command whose reply is an integer.
func DoInt(ctx context.Context, s Sender, cmd resp.Cmd) (int64, error) {
	var n int64
	err := DoFunc(ctx, s, cmd, func(v resp.Value) (err error) {
		n, err = v.AsInt()
		return err
	})
	return n, err
}
