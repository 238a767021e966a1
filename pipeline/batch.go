package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/nocopy"
	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/resp"
)

// Batch is an explicit pipeline: commands are appended, then Exec writes
// them in one go and waits for every reply, in order. A server error in
// one command is that command's reply and does not fail the others.
//
// A Batch is reusable: Reset keeps its memory, and Exec may run the same
// commands again. In steady state neither appending nor Exec allocates.
// A Batch is not safe for concurrent use.
//
// A Batch must not be copied once used: a copy would share the
// original's commands and replies (go vet's copylocks check reports a
// copy). A copy is detected at its first use and shares nothing: it
// drops its view of the original's memory, its Exec returns an error
// matching ErrCopied and sends nothing, and it reads no replies, until
// its Reset makes it an empty Batch of its own; the original is
// untouched.
type Batch struct {
	noCopy nocopy.NoCopy // go vet reports a copy
	// fast is the batch's address while a raw command is added without
	// a fact (the lean path of Add: not eager, no facts yet), nil
	// otherwise: Add's one test, which a copy (at another address) fails
	// as it fails own. First, so that the test is a compare at offset 0.
	fast *Batch
	cmds resp.Cmds
	// self is the batch's address, noted at its first use: a Batch at
	// another address is a copy (own).
	self *Batch
	// facts are the commands' once a typed command was added: from then
	// on a raw command's fact is made as resp encodes it (Facts.Strings),
	// and the raw ones added before it, whose names only were tested
	// (cmds.Plain), are read back once (catchUp). Before that special
	// notes a raw command that is not plain: a batch of plain raw
	// commands is sent without facts (wire.PlainCmds), a batch with
	// one gets them at Exec, read back the same way.
	facts   wire.Facts
	special bool
	// eager: the Sender of the last Exec reads facts (wire.WantsFacts:
	// hooks, a cluster), so raw commands added since get theirs as they
	// are encoded, rather than read back from the bytes;
	// lean: it reads none, so typed commands of no Guarded kind go
	// without theirs too. A Batch never sent is neither: its typed
	// commands keep the facts their builder has (a cluster routes by
	// them), its raw ones go without.
	eager, lean bool
	begun       bool // the name of the command begun at begunAt is untested
	begunAt     int
	col         wire.Collector
	// The typed side (typed.go): the first command added that was built
	// wrong, what the last Exec did, and the generation Reset moves on.
	bad     error
	done    bool          // the replies of the last Exec are there
	execErr error         // why the last Exec has no replies
	gen     uint64        // 64 bits: a handle is never taken for a later generation's
	cb      *cmds.Builder // Builder's (builder.go), made on first use
}

// ErrCopied is matched by the error of Exec, and of the handles' Value,
// of a Batch copied by value after its first use: it shares nothing with
// the original and sends nothing until its Reset.
var ErrCopied = errors.New("pipeline: Batch copied by value after use: Reset it before use")

// own is called first by every method that reads or writes the batch's
// memory: a load and a compare.
func (b *Batch) own() {
	if b.self != b {
		b.adopt()
	}
}

// adopt notes the batch's address at its first use; a copy (a Batch at
// another address than the one noted) drops what it shares with the
// original, unseen, and is refused until Reset.
//
//go:noinline
func (b *Batch) adopt() {
	if b.self == nil {
		b.self = b
		return
	}
	*b = Batch{self: b, bad: ErrCopied, gen: b.gen + 1}
}

// ErrIncompleteCommand is matched by the error of Exec when a command
// begun with Begin did not get the number of arguments it announced.
// Nothing is sent.
var ErrIncompleteCommand = resp.ErrArgCount

// ErrEmptyCommand is returned by Exec when a command of no arguments was
// added: the server answers it with nothing, so it would take the reply
// of the command after it. Nothing is sent.
var ErrEmptyCommand = resp.ErrEmptyCommand

// Len returns the number of commands in the batch.
func (b *Batch) Len() int { b.own(); return b.cmds.Len() }

// Reset removes every command and reply, keeping the memory.
func (b *Batch) Reset() {
	b.own()
	b.unlend()
	b.cmds.Reset()
	b.facts.Reset()
	b.special, b.begun = false, false
	b.col.Reset()
	b.bad, b.done, b.execErr = nil, false, nil
	b.gen++
	b.fast = nil
	if !b.eager && b.cb == nil {
		b.fast = b
	}
}

// Add appends a command given as strings.
func (b *Batch) Add(args ...string) {
	if b.fast == b {
		// One test for the copy check and the lean path; the name is
		// tested first, so that nothing of args is needed after the call.
		if len(args) == 0 || !cmds.Plain(args[0]) {
			b.special = true
		}
		b.cmds.Add(args...)
		return
	}
	b.addSlow(args)
}

// addSlow is Add in a batch used for the first time, a copy, or one
// whose commands get their facts as they come.
func (b *Batch) addSlow(args []string) {
	b.own()
	b.unlend()
	if b.eager || b.facts.Len() > 0 {
		b.catchUp()
		b.facts.Strings(&b.cmds, args)
		return
	}
	if b.cb == nil {
		b.fast = b // not with a Builder: it builds where Add would write
	}
	if len(args) == 0 || !cmds.Plain(args[0]) {
		b.special = true
	}
	b.cmds.Add(args...)
}

// AddBytes appends a command given as byte slices.
func (b *Batch) AddBytes(args ...[]byte) {
	b.own()
	b.unlend()
	if b.eager || b.facts.Len() > 0 {
		b.catchUp()
		b.facts.Bytes(&b.cmds, args)
		return
	}
	b.cmds.AddBytes(args...)
	if len(args) == 0 || !cmds.Plain(args[0]) {
		b.special = true
	}
}

// catchUp reads the facts of the commands added since the last fact
// (as arguments before the first typed command, or already encoded), so
// that the facts stay in the commands' order.
func (b *Batch) catchUp() {
	if b.facts.Len() < b.cmds.Len() {
		b.sync()
	}
}

// sync is catchUp's call, out of line so that catchUp inlines.
//
//go:noinline
func (b *Batch) sync() {
	b.facts.Sync(&b.cmds) // an error is Exec's to return
}

// AddCmd appends a command built on its own (resp.Command,
// resp.BuildCommand).
func (b *Batch) AddCmd(cmd resp.Cmd) {
	b.own()
	b.unlend()
	b.cmds.AddCmd(cmd)
	if !cmds.Plain(wire.NameOf(cmd.Bytes())) {
		b.special = true
	}
}

// Begin starts a command of nargs arguments (the command name included),
// to be given one by one with Arg, ArgBytes and ArgInt: the way to mix
// argument types without allocating. Exec refuses a batch in which a
// command got another number of arguments.
func (b *Batch) Begin(nargs int) {
	b.own()
	b.unlend()
	if b.begun {
		b.checkBegun()
	}
	at := len(b.cmds.Bytes())
	b.begunAt, b.begun = at+b.cmds.BeginAt(nargs), true
}

// checkBegun tests the name of the last command begun, once its
// arguments are in (at the next Begin, or Exec), so that Arg stays a
// plain append. begunAt is where the name's bulk header is.
func (b *Batch) checkBegun() {
	b.begun = false
	enc := b.cmds.Bytes()
	if b.begunAt >= len(enc) {
		b.special = true // no name given: Exec refuses the batch
		return
	}
	// The name, as resp wrote it: not there when another command was
	// added before any argument (Exec refuses the batch then).
	name, ok := resp.ShortBulkArg(enc[b.begunAt:])
	if !ok {
		name = resp.BulkArg(enc[b.begunAt:])
	}
	if !cmds.Plain(name) {
		b.special = true
	}
}

// Arg appends a string argument to the command begun with Begin.
func (b *Batch) Arg(s string) { b.argTo().Arg(s) }

// ArgBytes appends a byte-slice argument to the command begun with Begin.
func (b *Batch) ArgBytes(p []byte) { b.argTo().ArgBytes(p) }

// ArgInt appends an integer argument to the command begun with Begin.
func (b *Batch) ArgInt(i int64) { b.argTo().ArgInt(i) }

// argTo returns the commands an argument goes to: the batch's own, or,
// in a copy (a Batch copied between Begin and Arg), commands of nobody's
// that the argument is dropped into, without a call, so that Arg,
// ArgBytes and ArgInt stay inlined. The copy never appends to the
// original's bytes, and the next method that owns it (own) refuses it.
func (b *Batch) argTo() *resp.Cmds {
	if b.self == b {
		return &b.cmds
	}
	return new(resp.Cmds)
}

// Exec sends every command in one write and waits for all the replies.
// It returns nil when every reply arrived (some may be server errors: see
// Err), or the fault or ctx's error. After a fault or a cancellation the
// replies are not available; the commands may or may not have run.
//
// Nothing is sent when ctx is already done, when the Batch is a copy
// (ErrCopied), when a command was built wrong (ErrEmptyCommand, ErrIncompleteCommand, a cmds.Command whose Err
// is not nil), or when the connection
// refuses a command (conn.ErrCommandRefused: a subscription, an unclosed
// MULTI, …).
func (b *Batch) Exec(ctx context.Context, s conn.Sender) error {
	b.own()
	b.done = false
	err := b.exec(ctx, s)
	b.done, b.execErr = err == nil, err
	return err
}

func (b *Batch) exec(ctx context.Context, s conn.Sender) error {
	if b.bad != nil {
		return b.bad
	}
	w, err := b.submission(wire.WantsFacts(s))
	if err != nil {
		return err
	}
	if w.Len() == 0 {
		return ctx.Err()
	}
	b.col.Begin(w.Len())
	return b.col.Exchange(ctx, s, w, nil)
}

// submission is the batch's submission for a Sender that reads the facts
// of a Plain submission (wants), or not: Plain, without facts, when every
// command was added raw and is plain by its name and the Sender reads
// none; else with one fact per command.
func (b *Batch) submission(wants bool) (wire.Cmds, error) {
	if b.begun {
		b.checkBegun()
	}
	b.eager, b.lean = wants, !wants
	if b.facts.Len() == 0 && !b.special && !wants {
		return wire.PlainCmds(&b.cmds)
	}
	b.fast = nil // facts from here on (Add's eager path)
	return b.facts.Sync(&b.cmds)
}

// Replies returns the replies of the last Exec, in command order. They are
// valid until the next Exec or Reset.
func (b *Batch) Replies() []resp.Value {
	if b.self != b {
		return nil // never used, or a copy: none of its own
	}
	return b.col.Replies()
}

// Reply returns reply i of the last Exec.
func (b *Batch) Reply(i int) resp.Value {
	r := b.Replies()
	if i < 0 || i >= len(r) {
		panic(fmt.Sprintf("pipeline: Reply(%d) of %d replies", i, len(r)))
	}
	return r[i]
}

// Err returns the error reply of command i of the last Exec, or nil: a
// *resp.ServerError, or a *resp.ReplyTooLargeError when the reply was over
// the connection's resp.Limits and skipped (the other replies are kept).
func (b *Batch) Err(i int) error { return b.Reply(i).Err() }
