package resp

import (
	"errors"
	"strconv"

	"github.com/echomq/echomq-go/internal/rawcmd"
)

// The constructor package cmds builds its commands with (see
// internal/rawcmd): its builder encodes a command whole, in its own
// memory, so the Cmd only views the bytes.
func init() {
	rawcmd.New = func(b []byte) Cmd { return Cmd{b: b} }
	rawcmd.Failed = func(err error) Cmd { return Cmd{err: err} }
	rawcmd.Lend = (*Cmds).lend
	rawcmd.Take = (*Cmds).take
}

// ErrEmptyCommand is the error of a command of no arguments. The server
// answers such a command with nothing at all, so on a pipelined
// connection it would take the next command's reply: it is never sent.
var ErrEmptyCommand = errors.New("resp: command of no arguments")

// ErrArgCount is matched (errors.Is) by the error of a command built
// with BuildCommand or Cmds.Begin that was given another number of
// arguments than it announced. It is never sent.
var ErrArgCount = errors.New("resp: command given another number of arguments than announced")

// ErrBadArg is matched (errors.Is) by the error of an argument given as
// a Go value that cannot be written as a command's argument (conn's Do:
// a type it does not take, a NaN, a time.Duration where the command
// takes none). Nothing is sent.
var ErrBadArg = errors.New("conn: bad command argument")

// argCountError names the command and the counts.
type argCountError struct{ want, got int }

func (e *argCountError) Error() string {
	return ErrArgCount.Error() + ": announced " + strconv.Itoa(e.want) + ", given " + strconv.Itoa(e.got)
}

func (e *argCountError) Is(target error) bool { return target == ErrArgCount }

// Cmd is one command encoded as a RESP array of bulk strings, the only
// form in which a connection accepts a single command. It is built by
// Command, CommandBytes or BuildCommand (or by package cmds's builders,
// which encode a command whole), so its bytes always hold exactly one
// command, or it carries the error that says why it does not (Err);
// a connection refuses such a Cmd before sending anything. The zero Cmd
// is a command of no arguments.
//
// A Cmd views the buffer it was built in: it is valid until that buffer
// is reused.
type Cmd struct {
	b   []byte
	err error
}

// Command encodes a command whose arguments are strings into buf's
// memory (overwriting it; a nil or short buf is grown, which allocates).
func Command(buf []byte, args ...string) Cmd {
	if len(args) == 0 {
		return Cmd{err: ErrEmptyCommand}
	}
	b := AppendCommand(buf[:0], args...)
	return Cmd{b: b}
}

// CommandBytes encodes a command whose arguments are byte slices into
// buf's memory.
func CommandBytes(buf []byte, args ...[]byte) Cmd {
	if len(args) == 0 {
		return Cmd{err: ErrEmptyCommand}
	}
	b := AppendCommandBytes(buf[:0], args...)
	return Cmd{b: b}
}

// Bytes returns the encoded command. The caller must not modify it.
func (c Cmd) Bytes() []byte { return c.b }

// Err returns why the command cannot be sent (ErrEmptyCommand, or an
// error matching ErrArgCount), or nil.
func (c Cmd) Err() error {
	if c.err == nil && len(c.b) == 0 {
		return ErrEmptyCommand
	}
	return c.err
}

// CmdBuilder builds one command whose arguments mix strings, byte slices
// and integers, without allocating when its buffer has room:
//
//	cmd := resp.BuildCommand(buf[:0], 3).Arg("INCRBY").Arg(key).ArgInt(5).Cmd()
//
// Its methods take and return the builder by value, so a chain needs no
// variable.
type CmdBuilder struct {
	b    []byte
	want int // arguments announced
	got  int // arguments given
}

// BuildCommand starts a command of nargs arguments (its name included)
// in buf's memory.
func BuildCommand(buf []byte, nargs int) CmdBuilder {
	return CmdBuilder{b: AppendArrayHeader(buf[:0], nargs), want: nargs}
}

// Arg appends a string argument.
func (b CmdBuilder) Arg(s string) CmdBuilder {
	b.b = AppendBulkString(b.b, s)
	b.got++
	return b
}

// ArgBytes appends a byte-slice argument.
func (b CmdBuilder) ArgBytes(p []byte) CmdBuilder {
	b.b = AppendBulk(b.b, p)
	b.got++
	return b
}

// ArgInt appends an integer argument, in decimal.
func (b CmdBuilder) ArgInt(i int64) CmdBuilder {
	b.b = AppendBulkInt(b.b, i)
	b.got++
	return b
}

// Args appends every argument of a.
func (b CmdBuilder) Args(a *Args) CmdBuilder {
	b.b = append(b.b, a.b...)
	b.got += a.n
	return b
}

// Cmd returns the command; its Err reports a wrong argument count.
func (b CmdBuilder) Cmd() Cmd {
	switch {
	case b.want <= 0:
		return Cmd{err: ErrEmptyCommand}
	case b.got != b.want:
		return Cmd{err: &argCountError{want: b.want, got: b.got}}
	}
	return Cmd{b: b.b}
}

// Args is a run of encoded arguments and their count, for commands that
// share arguments encoded once (a script's KEYS and ARGV, a fixed command
// head). The zero Args is empty and ready; Reset keeps its memory.
type Args struct {
	b []byte
	n int
}

// Add appends a string argument.
func (a *Args) Add(s string) {
	a.b = AppendBulkString(a.b, s)
	a.n++
}

// AddBytes appends a byte-slice argument; the bytes are copied.
func (a *Args) AddBytes(p []byte) {
	a.b = AppendBulk(a.b, p)
	a.n++
}

// AddInt appends an integer argument, in decimal.
func (a *Args) AddInt(i int64) {
	a.b = AppendBulkInt(a.b, i)
	a.n++
}

// AddArgs appends every argument of o.
func (a *Args) AddArgs(o *Args) {
	a.b = append(a.b, o.b...)
	a.n += o.n
}

// Len returns the number of arguments.
func (a *Args) Len() int { return a.n }

// Size returns the encoded size in bytes.
func (a *Args) Size() int { return len(a.b) }

// Reset removes every argument, keeping the memory.
func (a *Args) Reset() { a.b, a.n = a.b[:0], 0 }
