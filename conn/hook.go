package conn

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/resp"
)

// Hook wraps every command and every pipeline a connection or Client
// sends, for logging, metrics and tracing. Set them in Options.Hooks; a
// Client passes them to its connections (and a pubsub.Subscription given
// the same Options runs them for its own commands). Each field may be
// nil.
//
// A submission of one command (Do, DoFunc, a typed command, a Stream
// flush of one) is a command: BeforeCommand as it is queued, AfterCommand
// once, when its reply arrives or when it ends without one. A submission
// of several (pipeline.Batch, a Stream flush, a dispatch batch) is a
// pipeline: BeforePipeline, then BeforeCommand for each of its commands
// in order, then AfterCommand for each in order as its reply arrives, then
// AfterPipeline once the last has ended. Every command is seen exactly
// once: refused ones (a *CommandError, a done ctx, ErrNotConnected) and
// ones ended by a fault included; a Client that moves a submission
// nothing had sent onto its next connection reports it once. Only the
// user's commands are seen: not the handshake, nor what a Client sends
// on its own behalf (CLIENT UNBLOCK for a cancelled blocking call,
// CLIENT ID for a lent connection under RESP2), nor the housekeeping of
// the packages built on conn (a cache's tracking, PTTLs and PINGs, a
// cluster's topology reads and redirects: see the package doc).
//
// The context a Before function returns (nil: the one it was given) is
// passed to the next hook's Before and to the After functions of the same
// command or pipeline, so that a hook can carry state (a span) from one to
// the other; the commands of a pipeline get the context its
// BeforePipeline returned. Hooks run in the order given, Before and After
// alike.
//
// The functions run on the goroutines that send commands and read
// replies, concurrently; they must be safe for concurrent use, must not
// block, and are called for every command, so they should be cheap.
// Without hooks (nor an Observer) a connection does no hook work at all.
// A function's panic is recovered (see PanicError): a Before function's
// refuses its submission, an After function's fails its call with the
// *PanicError; every other call goes on.
type Hook struct {
	// BeforeCommand is called as cmd is queued for sending, with raw,
	// the command as sent and its keys, valid only during the call.
	BeforeCommand func(ctx context.Context, cmd CommandInfo, raw RawCommand) context.Context
	// AfterCommand is called once for each BeforeCommand, took after the
	// submission was queued: with the reply (valid only during the
	// call) and err nil when it arrived; with the reply and a
	// *resp.ServerError when it was an error reply; with a
	// *resp.ReplyTooLargeError when it was skipped for breaking
	// Options.Limits; else with a zero Value and the error that ended the
	// command without a reply: the connection's fault (a *BrokenError,
	// ErrClosed), or what kept it from being sent (a *CommandError, the
	// caller's ctx.Err(), ErrNotConnected, the *PanicError of a Before
	// function). A caller that stops waiting
	// does not end its command: its reply still arrives, and ends it.
	AfterCommand func(ctx context.Context, cmd CommandInfo, reply resp.Value, took time.Duration, err error)
	// BeforePipeline is called as a submission of several commands is
	// queued, before their BeforeCommand.
	BeforePipeline func(ctx context.Context, p PipelineInfo) context.Context
	// AfterPipeline is called once for each BeforePipeline, after the
	// AfterCommand of its last command, with the error that ended the
	// submission early (as AfterCommand has it), or nil when every reply
	// arrived (error replies are the commands', not the pipeline's).
	AfterPipeline func(ctx context.Context, p PipelineInfo, took time.Duration, err error)
}

// PipelineInfo describes a submission of several commands to a [Hook].
type PipelineInfo struct {
	// Commands are the pipeline's commands in order; the slice is valid
	// only during the call.
	Commands []CommandInfo
}

// RawCommand is a command as a [Hook] sees it: its bytes as sent and its
// keys, read from what its encoder knew (cmds.Fact), not parsed again.
// It views the submission's memory: valid only during the call.
type RawCommand struct {
	b []byte
	f *cmds.Fact
}

// NewRawCommand is the RawCommand of the command encoded in b, whose
// keys f tells (nil: none known), for a Sender or subscriber written
// outside this package that runs Hooks itself.
func NewRawCommand(b []byte, f *cmds.Fact) RawCommand { return RawCommand{b: b, f: f} }

// Bytes returns the command as sent: a RESP array of bulk strings, as
// Cmds.All reads them.
func (c RawCommand) Bytes() []byte { return c.b }

// Keys returns the number of keys the command names (its shard channels
// after them: SPUBLISH's), as far as its encoder knew them.
func (c RawCommand) Keys() int {
	if c.f == nil {
		return 0
	}
	return len(c.f.Keys)
}

// Key returns key i, a view of the command's bytes; nil when i is not
// in [0, Keys()), as cmds.Command.Key.
func (c RawCommand) Key(i int) []byte {
	if uint(i) >= uint(c.Keys()) {
		return nil
	}
	return c.f.Key(c.b, i)
}

// ObserverHook is the Hook that tells obs of every command (what
// Options.Observer does).
func ObserverHook(obs Observer) Hook {
	return Hook{
		BeforeCommand: func(ctx context.Context, cmd CommandInfo, _ RawCommand) context.Context {
			obs.CommandStart(cmd)
			return ctx
		},
		AfterCommand: func(_ context.Context, cmd CommandInfo, _ resp.Value, took time.Duration, err error) {
			obs.CommandEnd(cmd, took, err)
		},
	}
}

// A Conn or Client reads the facts of a Plain submission only for its
// hooks: an encoder that knows it sends to one without hooks (dispatch's
// executors) need not make them (wire.WantsFacts).
func init() {
	wire.SetWanted(func(s wire.Sender) (wants, known bool) {
		switch c := s.(type) {
		case *Conn:
			return c.hooks != nil, true
		case *Client:
			return c.hooks != nil, true
		}
		return false, false
	})
	wire.SetCheckShared(checkShared)
	wire.SetOwnOf(func(s wire.Sender) wire.Sender {
		switch c := s.(type) {
		case *Conn:
			return ownConn{c}
		case *Client:
			return ownClient{c}
		}
		return nil
	})
	wire.SetHooksOf(func(o any) wire.Hooks {
		if s := newHookSet(o.(Options)); s != nil {
			return s
		}
		return nil
	})
}

// ownConn and ownClient are wire.OwnSender of a Conn and a Client: what
// the module sends through them on its own behalf, unseen by their hooks.
type (
	ownConn   struct{ c *Conn }
	ownClient struct{ c *Client }
)

// Send is Conn.Send without the hooks, which see none of it: the facts
// only the guard needs (wire.ForGuard), then the layer below Send.
func (o ownConn) Send(ctx context.Context, cmds wire.Cmds, h wire.Handler) error {
	return ownSend(ctx, cmds, h, o.c.send)
}

// Send is Client.Send without the hooks (as ownConn's).
func (o ownClient) Send(ctx context.Context, cmds wire.Cmds, h wire.Handler) error {
	return ownSend(ctx, cmds, h, o.c.send)
}

// ownSend sends cmds, the module's own, with send (a Conn's or a
// Client's layer below Send), with only the facts the guard needs.
func ownSend(ctx context.Context, cmds wire.Cmds, h wire.Handler, send func(context.Context, wire.Cmds, wire.Handler) error) error {
	cmds, l, err := wire.ForGuard(wire.Own(cmds))
	if err != nil {
		return err
	}
	err = send(ctx, cmds, h)
	wire.Release(l)
	return err
}

// Begin is wire.Hooks' (for a cluster): it starts cmds for the hooks.
func (s *hookSet) Begin(ctx context.Context, cmds wire.Cmds, h wire.Handler) (wire.Handler, error) {
	if !s.sees(cmds) {
		return h, nil
	}
	if cmds.Len() <= 0 || h == nil || len(cmds.Facts()) != cmds.Len() {
		return h, nil // the Sender refuses it itself
	}
	o := s.begin(ctx, cmds, h)
	if p := o.panic; p != nil {
		o.fail(p)
		return nil, p
	}
	// A cluster calls o's Reply from a Handler of its own, which the
	// reader's recover (Conn.recoverStep) cannot resume: each hook
	// function recovers its own panic there.
	o.guard = true
	return o, nil
}

// Fail is wire.Hooks': it ends a submission Begin started that was not
// sent.
func (s *hookSet) Fail(h wire.Handler, err error) {
	if o, ok := h.(*hooked); ok {
		o.fail(err)
	}
}

// factsFor returns cmds with the facts its receiver needs, s being its
// hooks (nil: none): hooks need every command's (wire.Known); without
// them the guard needs those of a submission that is not Plain only
// (wire.ForGuard). Release the Facts returned when Send returns.
func (s *hookSet) factsFor(cmds wire.Cmds) (wire.Cmds, *wire.Facts, error) {
	if s != nil {
		return wire.Known(cmds)
	}
	return wire.ForGuard(cmds)
}

// hookSet is the hooks of a connection, Options.Observer's last; nil when
// there are none.
type hookSet struct {
	hooks    []Hook
	pipeline bool         // some hook has BeforePipeline or AfterPipeline
	log      *slog.Logger // Options.Logger, for panics no call returns
}

// newHookSet gathers the hooks of opts, or returns nil when there are none.
func newHookSet(opts Options) *hookSet {
	hs := make([]Hook, 0, len(opts.Hooks)+1)
	hs = append(hs, opts.Hooks...)
	if opts.Observer != nil {
		hs = append(hs, ObserverHook(opts.Observer))
	}
	if len(hs) == 0 {
		return nil
	}
	s := &hookSet{hooks: hs, log: opts.Logger}
	for _, h := range hs {
		if h.BeforePipeline != nil || h.AfterPipeline != nil {
			s.pipeline = true
		}
	}
	return s
}

// sees reports whether the hooks see any command of cmds: none when it
// is what the module sends on its own behalf (wire.Own).
func (s *hookSet) sees(cmds wire.Cmds) bool {
	if s == nil {
		return false
	}
	lo, hi := wire.Seen(cmds)
	return lo < hi
}

// hooked wraps the Handler of one submission for its hooks. It is pooled:
// Done recycles it before passing the outcome on. Each hook function's
// panic is recovered (see PanicError): the first one is kept in panic,
// for the call to return, later ones are logged. The recover costs no
// defer per hook function on the per-command path: the BeforeCommand
// functions of a submission share one (befores), and an AfterCommand's
// panic in Reply is recovered by the reader, which holds one already,
// and resumed (resumeAfter).
type hooked struct {
	h     wire.Handler
	set   *hookSet
	start time.Time
	pctx  context.Context   // the pipeline's context, for AfterPipeline
	cmds  []CommandInfo     // the commands the hooks see
	ctxs  []context.Context // each command's context, for AfterCommand
	first int               // the submission's index of cmds[0] (wire.Seen)
	next  int               // commands of cmds ended
	multi bool              // a pipeline: the hooks see more than one command
	guard bool              // Reply's caller is not a Conn's reader: recover each hook function (Begin)
	panic *PanicError       // the first panic of a hook function

	bat uint32 // the submission's offset of cmds[0]

	// Reply's place while it runs the AfterCommand functions of command
	// next: hook hk-1 (hk 0: none running), with the reply v: what
	// resumeAfter needs to finish Reply after a panic.
	hk int
	v  resp.Value
}

var hookedPool = sync.Pool{New: func() any { return new(hooked) }}

// begin starts a submission: it names the commands the hooks see and
// calls the Before hooks. When one of them panicked (o.panic), the caller
// refuses the submission: o.fail(o.panic).
func (s *hookSet) begin(ctx context.Context, cmds wire.Cmds, h wire.Handler) *hooked {
	o := hookedPool.Get().(*hooked)
	o.h, o.set, o.next, o.panic, o.guard = h, s, 0, nil, false
	o.cmds = o.cmds[:0]
	lo, hi := wire.Seen(cmds)
	o.first = lo
	at := uint32(0)
	for i := range cmds.Facts()[:hi] {
		f := &cmds.Facts()[i]
		if i == lo {
			o.bat = at
		}
		if i >= lo {
			o.cmds = append(o.cmds, commandInfo(f, cmds.Bytes()[at:at+f.Size]))
		}
		at += f.Size
	}
	o.multi = len(o.cmds) > 1
	o.start = time.Now()
	if o.multi && s.pipeline {
		p := PipelineInfo{Commands: o.cmds}
		for i := range s.hooks {
			if s.hooks[i].BeforePipeline != nil {
				ctx = o.beforePipeline(&s.hooks[i], ctx, p)
			}
		}
	}
	o.pctx = ctx
	for i, k, at := 0, 0, o.bat; ; k++ {
		if i, k, at = o.befores(cmds, i, k, at); i == len(o.cmds) {
			break
		}
	}
	return o
}

// befores calls the BeforeCommand functions of the commands the hooks
// see, from command i's hook k on (at: command i's offset in the
// submission's bytes), and returns len(o.cmds) once it got to the end.
// A panic is recovered (one defer per call of befores, none per hook
// function), kept, and ends the call where it happened: befores returns
// the place of the hook that panicked, and is called again past it.
func (o *hooked) befores(cmds wire.Cmds, i, k int, at uint32) (ri, rk int, rat uint32) {
	defer func() {
		if r := recover(); r != nil {
			o.keep(recovered("BeforeCommand", r))
			ri, rk, rat = i, k, at
		}
	}()
	hooks := o.set.hooks
	facts, b := cmds.Facts(), cmds.Bytes()
	for ; i < len(o.cmds); i, k = i+1, 0 {
		f := &facts[o.first+i]
		raw := RawCommand{b: b[at : at+f.Size], f: f}
		if k == 0 {
			o.ctxs = append(o.ctxs, o.pctx)
		}
		for ; k < len(hooks); k++ {
			if before := hooks[k].BeforeCommand; before != nil {
				if x := before(o.ctxs[i], o.cmds[i], raw); x != nil {
					o.ctxs[i] = x
				}
			}
		}
		at += f.Size
	}
	return i, k, at
}

// beforePipeline calls hk.BeforePipeline, recovering its panic.
func (o *hooked) beforePipeline(hk *Hook, ctx context.Context, p PipelineInfo) (out context.Context) {
	defer o.recoverIn("BeforePipeline")
	out = ctx
	if c := hk.BeforePipeline(ctx, p); c != nil {
		out = c
	}
	return out
}

// afterCommand calls hk.AfterCommand for command i, recovering its panic.
func (o *hooked) afterCommand(hk *Hook, i int, v resp.Value, took time.Duration, err error) {
	defer o.recoverIn("AfterCommand")
	hk.AfterCommand(o.ctxs[i], o.cmds[i], v, took, err)
}

// afterPipeline calls hk.AfterPipeline, recovering its panic.
func (o *hooked) afterPipeline(hk *Hook, p PipelineInfo, took time.Duration, err error) {
	defer o.recoverIn("AfterPipeline")
	hk.AfterPipeline(o.pctx, p, took, err)
}

// recoverIn, deferred around a call of the hook function fn, recovers
// its panic (keep).
func (o *hooked) recoverIn(fn string) {
	if r := recover(); r != nil {
		o.keep(recovered(fn, r))
	}
}

// keep keeps p, a hook function's panic, as o.panic when it is the
// first, else logs it.
func (o *hooked) keep(p *PanicError) {
	if o.panic == nil {
		o.panic = p
		return
	}
	logPanic(o.set.log, p)
}

// Reply ends command i, then passes its reply on. It defers no recover:
// on a Conn's reader (o.guard false) an AfterCommand's panic unwinds to
// the reader's recover, which resumes Reply where it stopped
// (Conn.recoverStep, resumeAfter).
func (o *hooked) Reply(i int, v resp.Value) {
	if j := i - o.first; uint(j) < uint(len(o.cmds)) {
		var err error
		if v.IsError() {
			err = v.Err()
		}
		took := time.Since(o.start)
		hooks := o.set.hooks
		if o.guard {
			for k := range hooks {
				if hooks[k].AfterCommand != nil {
					o.afterCommand(&hooks[k], j, v, took, err)
				}
			}
		} else {
			o.v = v // o.next is j
			for k := range hooks {
				if after := hooks[k].AfterCommand; after != nil {
					o.hk = k + 1
					after(o.ctxs[j], o.cmds[j], v, took, err)
				}
			}
			o.hk = 0
		}
		o.next = j + 1
	}
	o.h.Reply(i, v)
}

// resumeAfter finishes a Reply whose hook o.hk-1 panicked with r in
// AfterCommand, the reader having recovered it (Conn.recoverStep): it
// keeps the panic, calls the other hooks' AfterCommand for the command,
// then the wrapped Handler's Reply, and returns that Reply's own panic,
// if any (the reader then treats it as any Handler's).
func (o *hooked) resumeAfter(r any) (hr any) {
	o.keep(recovered("AfterCommand", r))
	j, v, next := o.next, o.v, o.hk // hook o.hk-1 panicked: o.hk is next
	o.hk, o.v = 0, resp.Value{}
	took := time.Since(o.start) // a little later than Reply's: the panic came between
	var err error
	if v.IsError() {
		err = v.Err()
	}
	hooks := o.set.hooks
	for k := next; k < len(hooks); k++ {
		if hooks[k].AfterCommand != nil {
			o.afterCommand(&hooks[k], j, v, took, err)
		}
	}
	o.next = j + 1
	defer func() { hr = recover() }()
	o.h.Reply(o.first+j, v)
	return nil
}

// hookedOf returns the hooked that h is, or that wraps h (a Client's
// blocking submission: lent), or nil.
func hookedOf(h wire.Handler) *hooked {
	switch h := h.(type) {
	case *hooked:
		return h
	case *lent:
		o, _ := h.h.(*hooked)
		return o
	}
	return nil
}

// Waits is the wrapped Handler's.
func (o *hooked) Waits() bool { return o.h.Waits() }

// PanicFunc is the wrapped Handler's (see wire.Named).
func (o *hooked) PanicFunc() string { return wire.PanicFunc(o.h) }

// Done ends the commands left without a reply, and the pipeline, with
// err, recycles o and passes err on: the panic of a hook, when one
// panicked and err is nil (see PanicError).
func (o *hooked) Done(err error) {
	o.end(err)
	if p := o.panic; p != nil {
		if err == nil {
			err = p
		} else {
			logPanic(o.set.log, p)
		}
	}
	h := o.h
	o.release()
	h.Done(err)
}

// fail ends every command with err, for a submission that was never
// queued, and recycles o; the wrapped Handler is not called. A hook's
// panic other than err is logged: the caller returns err.
func (o *hooked) fail(err error) {
	o.end(err)
	if p := o.panic; p != nil && error(p) != err {
		logPanic(o.set.log, p)
	}
	o.release()
}

func (o *hooked) end(err error) {
	if o.next == len(o.cmds) && !(o.multi && o.set.pipeline) {
		return // every command ended with its reply, and no pipeline hook: no clock read
	}
	took := time.Since(o.start)
	hooks := o.set.hooks
	for i := o.next; i < len(o.cmds); i++ {
		for k := range hooks {
			if hooks[k].AfterCommand != nil {
				o.afterCommand(&hooks[k], i, resp.Value{}, took, err)
			}
		}
	}
	o.next = len(o.cmds)
	if o.multi && o.set.pipeline {
		p := PipelineInfo{Commands: o.cmds}
		for k := range hooks {
			if hooks[k].AfterPipeline != nil {
				o.afterPipeline(&hooks[k], p, took, err)
			}
		}
	}
}

func (o *hooked) release() {
	o.h, o.set, o.pctx, o.panic, o.v, o.hk = nil, nil, nil, nil, resp.Value{}, 0
	clear(o.cmds)
	clear(o.ctxs)
	o.ctxs = o.ctxs[:0]
	if cap(o.cmds) > 1<<12 {
		o.cmds, o.ctxs = nil, nil
	}
	hookedPool.Put(o)
}

// unhooked is a Conn seen without its hooks: what a Client sends on its
// own behalf (CLIENT UNBLOCK for a cancelled blocking call, CLIENT ID for
// a lent connection under RESP2) goes through it, for the user never
// sent those commands, so hooks and the Observer do not see them. (The
// handshake is not sent through Send at all.) It takes only submissions
// with their facts, as wire.DoFunc makes them.
type unhooked struct{ c *Conn }

// Send is Conn.Send without the hooks.
func (u unhooked) Send(ctx context.Context, cmds wire.Cmds, h wire.Handler) error {
	if len(cmds.Facts()) != cmds.Len() {
		return wire.ErrMalformed
	}
	return u.c.send(ctx, cmds, h)
}

// doIntOwn is DoInt for a command the Client sends on its own behalf,
// unseen by the hooks.
func (c *Conn) doIntOwn(ctx context.Context, cmd resp.Cmd) (int64, error) {
	return wire.DoInt(ctx, unhooked{c}, cmd)
}
