// Package wire is the plumbing between the connections (conn.Conn,
// conn.Client and, later, cluster clients) and the layers that send
// through them (pipeline, dispatch, emq): the submission of counted
// commands with a Handler for their replies, the pooled one-command call
// behind DoFunc, and the Collector behind explicit batches.
//
// Nothing here is public API: a Handler can be named only inside this
// module, so only this module's packages submit commands this way, and
// they build every submission from resp.Cmd, resp.Cmds or an equally
// counted builder, so the count always matches the bytes.
package wire

import (
	"context"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/resp"
)

// A Handler receives the replies of one submission. Its methods run on
// the goroutine that holds the connection's reader role (the reader
// goroutine, or a caller reading its own replies) and must not block.
// A panic in them is recovered by the connection (see conn.PanicError).
type Handler interface {
	// Reply is called with reply i (from 0) of the submission, in the
	// order the commands were sent. v is valid only during the call.
	Reply(i int, v resp.Value)
	// Done is called exactly once per submission: with nil after the
	// last Reply, or with the error that failed the connection (the
	// replies not delivered by then are lost).
	Done(err error)
	// Waits reports whether the submitter waits for Done on its own
	// goroutine right after submitting, so that it may read the replies
	// itself when nobody else is reading (saving two goroutine
	// switches), and so that a blocking command can be given a
	// connection of its own.
	Waits() bool
}

// Named is implemented by a Handler that runs a user's function the
// connection should name when that function panics (a Stream's
// ReplyFunc), and by a Handler that wraps another (forwarding PanicFunc).
type Named interface {
	// PanicFunc names the function a panic in Reply or Done came from,
	// or is "" for the Handler's own method.
	PanicFunc() string
}

// PanicFunc is h's PanicFunc, or "" when h is not Named.
func PanicFunc(h Handler) string {
	if n, ok := h.(Named); ok {
		return n.PanicFunc()
	}
	return ""
}

// Cmds is a submission: N commands encoded back to back in B, and the
// facts of each (its kind, timeout, keys, where its arguments are), known
// where it was encoded. Facts nil means unknown: the Sender that receives
// the submission reads them from B, once (Known). It is built from resp's
// counted types (FromCmd, FromCmds: facts unknown), by this module's
// encoders with a Facts beside them, or by hand.
type Cmds struct {
	B []byte
	N int
	// Facts has one cmds.Fact per command, in order, or is nil. The
	// facts' Keys and spans are offsets in each command's own bytes (the
	// Size of the facts before it on).
	Facts []cmds.Fact
	// plain, with Facts nil: the encoder found every command plain by
	// its name (cmds.Plain), so none needs the guard, and a Sender that
	// needs no more than that sends the submission without reading its
	// facts (ForGuard); one that needs them (hooks, a cluster's routing)
	// reads them from B all the same (Known). Only this package sets it
	// (DoFunc, DoCommand, PlainCmds), and only for a Sender that wants no
	// facts (WantsFacts), so no user's code holds a Plain Cmds: a
	// submission made or edited by hand is always read.
	plain bool
	// seen says which commands a Sender's hooks see: 0, every one (the
	// user's submission); seenNone, none (what the module sends on its
	// own behalf); k > 0, command k-1 alone, the others being the
	// module's (the PTTL a cache sends beside a read). Only this
	// package sets it (Own, OwnSender, UserOnly), for the module's own
	// packages.
	seen int32
}

const seenNone = -1

// Own marks every command of c as the module's own housekeeping (a
// topology read, tracking, a health check), which hooks do not see.
func Own(c Cmds) Cmds {
	c.seen = seenNone
	return c
}

// UserOnly marks command i of c as the user's and the others as the
// module's own (sent beside it: a cache's PTTL, an ASKING): hooks see
// command i alone. A submission marked Own stays so.
func UserOnly(c Cmds, i int) Cmds {
	if c.seen != seenNone {
		c.seen = int32(i) + 1
	}
	return c
}

// Seen returns the commands of c that hooks see, as a range [lo, hi) of
// indexes: [0, N) unless Own or UserOnly marked it.
func Seen(c Cmds) (lo, hi int) {
	switch {
	case c.seen == 0:
		return 0, c.N
	case c.seen == seenNone:
		return 0, 0
	}
	lo = int(c.seen) - 1
	return lo, min(lo+1, c.N)
}

// OwnSender is s sending every submission marked Own: what the module
// sends through it on its own behalf, unseen by s's hooks. For package
// conn's Conn and Client it allocates nothing (SetOwnOf).
func OwnSender(s Sender) Sender {
	if o := ownOf(s); o != nil {
		return o
	}
	if o, ok := s.(own); ok {
		return o
	}
	return own{s}
}

// ownOf is set by package conn (SetOwnOf): OwnSender of its Conn and
// Client, made without allocating; nil for another Sender.
var ownOf = func(Sender) Sender { return nil }

// SetOwnOf sets what OwnSender asks first. Package conn calls it in its
// init, before any submission.
func SetOwnOf(f func(Sender) Sender) { ownOf = f }

// Hooks runs a Sender's hooks (package conn's Hook) around the
// submissions a Sender of this module takes and sends on through
// connections marked not to run them (Own): a cluster's, whose hooks see
// each submission once, with its final replies, however often it is
// redirected. HooksOf makes it.
type Hooks interface {
	// Begin starts cmds, with its facts, for the hooks and returns the
	// Handler to send it with, which ends it for them before passing each
	// reply and Done on to h. When a Before hook panicked it returns the
	// error to refuse the submission with, the hooks told already.
	Begin(ctx context.Context, cmds Cmds, h Handler) (Handler, error)
	// Fail ends, with err, a submission whose Handler Begin returned and
	// which was not sent (Send returned err).
	Fail(h Handler, err error)
}

// hooksOf is set by package conn (SetHooksOf).
var hooksOf = func(any) Hooks { return nil }

// SetHooksOf sets HooksOf. Package conn calls it in its init.
func SetHooksOf(f func(opts any) Hooks) { hooksOf = f }

// HooksOf returns the Hooks of opts (a conn.Options), or nil when it has
// none.
func HooksOf(opts any) Hooks { return hooksOf(opts) }

type own struct{ s Sender }

func (o own) Send(ctx context.Context, c Cmds, h Handler) error { return o.s.Send(ctx, Own(c), h) }

// Plain reports whether the submission's encoder found every command
// plain by its name (cmds.Plain), and sent it without its facts for a
// connection without hooks to send unread. Only the module's own
// encoders make Plain submissions.
func (c Cmds) Plain() bool { return c.plain && c.Facts == nil }

// PlainCmds is the submission of every command in c, which its encoder
// found plain by their names: without facts, Plain. It is only for a
// Sender that reads no facts of a Plain submission (WantsFacts false:
// this module's own Conn or Client without hooks), which hands it to no
// user's code: a Plain Cmds a user held and edited (B appended, N
// changed, as conn.Cmds says a submission is joined) would keep the mark
// and be sent unread.
func PlainCmds(c *resp.Cmds) (Cmds, error) {
	w, err := FromCmds(c)
	w.plain = err == nil
	return w, err
}

// FromCmd is the submission of one command; its facts are unknown (it
// is never Plain: conn.CmdsOf gives it to the user; DoFunc marks its
// own).
func FromCmd(c resp.Cmd) (Cmds, error) {
	if err := c.Err(); err != nil {
		return Cmds{}, err
	}
	return Cmds{B: c.Bytes(), N: 1}, nil
}

// FromCmds is the submission of every command in c; its facts are
// unknown.
func FromCmds(c *resp.Cmds) (Cmds, error) {
	if err := c.Err(); err != nil {
		return Cmds{}, err
	}
	return Cmds{B: c.Bytes(), N: c.Len()}, nil
}

// Sender submits commands: conn.Conn, conn.Client and every client this
// module builds on them implement it.
type Sender interface {
	// Send queues the commands for writing; h gets their replies, in
	// order. When Send returns an error, nothing was sent and h is never
	// called. cmds.B is copied: the caller may reuse it when Send returns.
	Send(ctx context.Context, cmds Cmds, h Handler) error
}

// ScriptRegistry is implemented by senders that load scripts by
// themselves where a node lacks one (the cluster client, per node):
// dispatch's scripted executor registers every script it runs.
type ScriptRegistry interface {
	RegisterScript(sha, src string)
}
