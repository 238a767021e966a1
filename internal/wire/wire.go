// Package wire is the plumbing between the connections (conn.Conn,
// conn.Client and, later, cluster clients) and the layers that send
// through them (pipeline, dispatch, emq): the submission of counted
// commands with a Handler for their replies, the pooled one-command call
// behind DoFunc, and the Collector behind explicit batches.
//
// Nothing here is public API. The submission, its Handler and the
// one-method Sender are package submit's public types; what is here is
// how this module's encoders make submissions with the facts and marks
// only they know (Make, PlainCmds, Own, UserOnly), each from resp.Cmd,
// resp.Cmds or an equally counted builder, so the count always matches
// the bytes.
package wire

import (
	"context"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/internal/subkey"
	"github.com/echomq/echomq-go/resp"
	"github.com/echomq/echomq-go/submit"
)

// Handler is the Handler of a submission (see package submit).
type Handler = submit.Handler

// Sender is the one-method Sender (see package submit).
type Sender = submit.Sender

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

// Cmds is the submission (see package submit): the module's encoders
// make theirs here, with the facts they know (Make) and the marks only
// the module sets (Plain, Own, UserOnly).
type Cmds = submit.Cmds

// sub is package submit's constructor and reader of its marks.
var sub = subkey.Access.(subkey.Funcs[submit.Cmds])

// Make is the submission of the n commands encoded in b, with the facts
// its encoder knows (one per command, each with its command's Size), or
// nil: unknown, read from b by the Sender.
func Make(b []byte, n int, facts []cmds.Fact) Cmds { return sub.Make(b, n, facts, false, 0) }

const seenNone = -1

// Own marks every command of c as the module's own housekeeping (a
// topology read, tracking, a health check), which hooks do not see.
func Own(c Cmds) Cmds { return sub.Make(c.Bytes(), c.Len(), c.Facts(), c.Plain(), seenNone) }

// UserOnly marks command i of c as the user's and the others as the
// module's own (sent beside it: a cache's PTTL, an ASKING): hooks see
// command i alone. A submission marked Own stays so.
func UserOnly(c Cmds, i int) Cmds {
	if sub.Seen(c) == seenNone {
		return c
	}
	return sub.Make(c.Bytes(), c.Len(), c.Facts(), c.Plain(), int32(i)+1)
}

// Seen returns the commands of c that hooks see, as a range [lo, hi) of
// indexes: [0, N) unless Own or UserOnly marked it.
func Seen(c Cmds) (lo, hi int) {
	switch seen := sub.Seen(c); {
	case seen == 0:
		return 0, c.Len()
	case seen == seenNone:
		return 0, 0
	default:
		lo = int(seen) - 1
	}
	return lo, min(lo+1, c.Len())
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

// PlainCmds is the submission of every command in c, which its encoder
// found plain by their names: without facts, Plain. It is only for a
// Sender that reads no facts of a Plain submission (WantsFacts false:
// this module's own Conn or Client without hooks), which hands it to no
// user's code (a user cannot edit a submission, only make one with
// submit.New, which is never Plain).
func PlainCmds(c *resp.Cmds) (Cmds, error) {
	if err := c.Err(); err != nil {
		return Cmds{}, err
	}
	return sub.Make(c.Bytes(), c.Len(), nil, true, 0), nil
}

// FromCmd is the submission of one command; its facts are unknown (it
// is never Plain: conn.CmdsOf gives it to the user; DoFunc marks its
// own).
func FromCmd(c resp.Cmd) (Cmds, error) {
	if err := c.Err(); err != nil {
		return Cmds{}, err
	}
	return Make(c.Bytes(), 1, nil), nil
}

// FromCmds is the submission of every command in c; its facts are
// unknown.
func FromCmds(c *resp.Cmds) (Cmds, error) {
	if err := c.Err(); err != nil {
		return Cmds{}, err
	}
	return Make(c.Bytes(), c.Len(), nil), nil
}

// ScriptRegistry is implemented by senders that load scripts by
// themselves where a node lacks one (the cluster client, per node):
// dispatch's scripted executor registers every script it runs.
type ScriptRegistry interface {
	RegisterScript(sha, src string)
}
