package resp

import "slices"

// Cmds is a sequence of encoded commands and its count, the form in
// which a connection accepts many commands at once (pipeline.Batch and
// pipeline.Stream build one). Commands are added whole (Add, AddBytes,
// AddCmd) or argument by argument after Begin, the way to mix argument
// types without allocating. A command of no arguments, or one given
// another number of arguments than Begin announced, makes Err non-nil,
// and a connection then refuses the whole Cmds before sending anything.
//
// The zero Cmds is empty and ready. Reset keeps its memory, so a reused
// Cmds allocates nothing in steady state. It is not safe for concurrent
// use.
type Cmds struct {
	b    []byte
	n    int
	want int // arguments announced by Begin
	got  int // arguments given since Begin
	err  error
}

// Add appends a command given as strings.
func (c *Cmds) Add(args ...string) {
	c.end()
	if len(args) == 0 {
		c.fail(ErrEmptyCommand)
		return
	}
	c.b = AppendCommand(c.b, args...)
	c.n++
}

// AddBytes appends a command given as byte slices.
func (c *Cmds) AddBytes(args ...[]byte) {
	c.end()
	if len(args) == 0 {
		c.fail(ErrEmptyCommand)
		return
	}
	c.b = AppendCommandBytes(c.b, args...)
	c.n++
}

// AddCmd appends a command built on its own; one that cannot be sent
// (cmd.Err) makes Err non-nil.
func (c *Cmds) AddCmd(cmd Cmd) {
	c.end()
	if err := cmd.Err(); err != nil {
		c.fail(err)
		return
	}
	c.b = append(c.b, cmd.b...)
	c.n++
}

// Begin starts a command of nargs arguments (the command name included),
// given one by one with Arg, ArgBytes, ArgInt and Args.
func (c *Cmds) Begin(nargs int) {
	c.end()
	if nargs <= 0 {
		c.fail(ErrEmptyCommand)
		nargs = 0
	}
	c.b = AppendArrayHeader(c.b, nargs)
	c.want, c.got = nargs, 0
	c.n++
}

// Arg appends a string argument to the command begun with Begin.
func (c *Cmds) Arg(s string) {
	c.got++
	appendArg(&c.b, s)
}

// ArgBytes appends a byte-slice argument to the command begun with Begin.
func (c *Cmds) ArgBytes(p []byte) {
	c.got++
	appendArgBytes(&c.b, p)
}

// appendArg appends s to *dst as a bulk string in one call, its
// one-digit header written in line (as AppendCommand writes it), so that
// Arg, over it, stays small enough to inline into pipeline.Batch.Arg.
//
//go:noinline
func appendArg(dst *[]byte, s string) {
	d := *dst
	if n := len(s); n < 10 {
		d = append(d, '$', byte('0'+n), '\r', '\n')
	} else {
		d = appendHeader(d, '$', int64(n))
	}
	d = append(d, s...)
	*dst = append(d, '\r', '\n')
}

// appendArgBytes is appendArg for a byte slice. The two bodies are kept
// apart on purpose: one generic body passes a dictionary, which puts
// pipeline.Batch.Arg over the inline budget (82 > 80; TestHotPathInlines).
//
//go:noinline
func appendArgBytes(dst *[]byte, p []byte) {
	d := *dst
	if n := len(p); n < 10 {
		d = append(d, '$', byte('0'+n), '\r', '\n')
	} else {
		d = appendHeader(d, '$', int64(n))
	}
	d = append(d, p...)
	*dst = append(d, '\r', '\n')
}

// ArgInt appends an integer argument to the command begun with Begin.
func (c *Cmds) ArgInt(i int64) {
	c.got++
	appendBulkInt(&c.b, i)
}

// Args appends every argument of a to the command begun with Begin.
func (c *Cmds) Args(a *Args) {
	c.b = append(c.b, a.b...)
	c.got += a.n
}

// end checks the argument count of the command begun with Begin.
func (c *Cmds) end() {
	if c.got != c.want {
		c.miscounted()
	}
}

// miscounted records that the command begun with Begin got another
// number of arguments, and starts the count afresh.
func (c *Cmds) miscounted() {
	c.fail(&argCountError{want: c.want, got: c.got})
	c.want, c.got = 0, 0
}

func (c *Cmds) fail(err error) {
	if c.err == nil {
		c.err = err
	}
}

// lend returns c's bytes to their capacity, at least room past its
// length at, for a command to be built in place (internal/rawcmd.Lend);
// ok is false while a command begun with Begin is in c (its arguments
// would go where the lent command is) or c has an error.
func (c *Cmds) lend(room int) (buf []byte, at int, ok bool) {
	if c.want != 0 || c.err != nil {
		return nil, 0, false
	}
	if cap(c.b)-len(c.b) < room {
		c.b = slices.Grow(c.b, room)
	}
	return c.b[:cap(c.b)], len(c.b), true
}

// take appends p, a whole command, without a copy when it was built
// where c's next command goes (internal/rawcmd.Take).
func (c *Cmds) take(p []byte) bool {
	l := len(c.b)
	if len(p) == 0 || cap(c.b)-l < len(p) || c.want != 0 || c.err != nil || &c.b[:l+1][l] != &p[0] {
		return false
	}
	c.b = c.b[:l+len(p)]
	c.n++
	return true
}

// Len returns the number of commands.
func (c *Cmds) Len() int { return c.n }

// Bytes returns the encoded commands. The caller must not modify them.
func (c *Cmds) Bytes() []byte { return c.b }

// Err returns why the commands cannot be sent: ErrEmptyCommand, or an
// error matching ErrArgCount (the last command begun with Begin is
// checked too), or nil.
func (c *Cmds) Err() error {
	if c.err == nil && c.got != c.want {
		return &argCountError{want: c.want, got: c.got}
	}
	return c.err
}

// Reset removes every command, keeping the memory.
func (c *Cmds) Reset() {
	*c = Cmds{b: c.b[:0]}
}
