package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/resp"
)

// Batch is an explicit pipeline: commands are appended, then Exec writes
// them in one go and waits for every reply, in order. A server error in
// one command is that command's reply and does not fail the others.
//
// A Batch is reusable: Reset keeps its memory, and Exec may run the same
// commands again. In steady state neither appending nor Exec allocates.
// A Batch is not safe for concurrent use.
type Batch struct {
	cmds  []byte
	n     int
	want  int  // arguments still owed by the command being built
	empty bool // a command of no arguments was added
	col   conn.Collector
}

// ErrIncompleteCommand is returned by Exec when the last command begun
// with Begin did not get all the arguments it announced.
var ErrIncompleteCommand = errors.New("pipeline: command given fewer arguments than announced")

// ErrEmptyCommand is returned by Exec when a command of no arguments was
// added: the server answers it with nothing, so it would take the reply
// of the command after it.
var ErrEmptyCommand = errors.New("pipeline: command of no arguments")

// Len returns the number of commands in the batch.
func (b *Batch) Len() int { return b.n }

// Reset removes every command and reply, keeping the memory.
func (b *Batch) Reset() {
	b.cmds, b.n, b.want, b.empty = b.cmds[:0], 0, 0, false
	b.col.Reset()
}

// Add appends a command given as strings.
func (b *Batch) Add(args ...string) {
	b.empty = b.empty || len(args) == 0
	b.cmds = resp.AppendCommand(b.cmds, args...)
	b.n++
}

// AddBytes appends a command given as byte slices.
func (b *Batch) AddBytes(args ...[]byte) {
	b.empty = b.empty || len(args) == 0
	b.cmds = resp.AppendCommandBytes(b.cmds, args...)
	b.n++
}

// AddEncoded appends n commands already encoded as RESP arrays.
func (b *Batch) AddEncoded(cmds []byte, n int) {
	b.cmds = append(b.cmds, cmds...)
	b.n += n
}

// Begin starts a command of nargs arguments (the command name included),
// to be given one by one with Arg, ArgBytes and ArgInt: the way to mix
// argument types without allocating.
func (b *Batch) Begin(nargs int) {
	b.cmds = resp.AppendArrayHeader(b.cmds, nargs)
	b.want = nargs
	b.empty = b.empty || nargs <= 0
	b.n++
}

// Arg appends a string argument to the command begun with Begin.
func (b *Batch) Arg(s string) {
	b.cmds = resp.AppendBulkString(b.cmds, s)
	b.want--
}

// ArgBytes appends a byte-slice argument to the command begun with Begin.
func (b *Batch) ArgBytes(p []byte) {
	b.cmds = resp.AppendBulk(b.cmds, p)
	b.want--
}

// ArgInt appends an integer argument to the command begun with Begin.
func (b *Batch) ArgInt(i int64) {
	b.cmds = resp.AppendBulkInt(b.cmds, i)
	b.want--
}

// Exec sends every command in one write and waits for all the replies.
// It returns nil when every reply arrived (some may be server errors: see
// Err), or the fault or ctx's error. After a fault or a cancellation the
// replies are not available; the commands may or may not have run.
func (b *Batch) Exec(ctx context.Context, s conn.Sender) error {
	if b.empty {
		return ErrEmptyCommand
	}
	if b.want != 0 {
		return ErrIncompleteCommand
	}
	if b.n == 0 {
		return nil
	}
	b.col.Begin(b.n)
	return b.col.Exchange(ctx, s, b.cmds, b.n, nil)
}

// Replies returns the replies of the last Exec, in command order. They are
// valid until the next Exec or Reset.
func (b *Batch) Replies() []resp.Value { return b.col.Replies() }

// Reply returns reply i of the last Exec.
func (b *Batch) Reply(i int) resp.Value {
	r := b.Replies()
	if i < 0 || i >= len(r) {
		panic(fmt.Sprintf("pipeline: Reply(%d) of %d replies", i, len(r)))
	}
	return r[i]
}

// Err returns the server error of command i of the last Exec, or nil.
func (b *Batch) Err(i int) error { return b.Reply(i).Err() }
