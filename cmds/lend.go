package cmds

import (
	"github.com/echomq/echomq-go/internal/lend"
	"github.com/echomq/echomq-go/internal/rawcmd"
	"github.com/echomq/echomq-go/resp"
)

// A Builder bound to a resp.Cmds (a pipeline.Batch's own, through
// internal/lend) builds each command in the Cmds' spare memory, where
// the Cmds' next command goes: its main run starts headRoom-4 bytes
// before that place, so that a command of under 10 arguments, whose
// array header is 4 bytes, ends up exactly there, and AppendTo takes it
// without a copy. A longer header would reach into the command before
// it: such a command is copied behind its header (headBig). The bound
// Builder's own memory is kept in priv meanwhile.

var (
	lendCmds = rawcmd.Lend.(func(c *resp.Cmds, room int) ([]byte, int, bool))
	takeCmds = rawcmd.Take.(func(c *resp.Cmds, p []byte) bool)
)

// lendRoom is the spare memory a bound Builder asks for: a command
// longer than it grows into the Builder's own memory (AppendTo copies
// it then).
const lendRoom = 512

func init() {
	lend.Bind = func(b *Builder, c *resp.Cmds) { b.dst = c }
	lend.Unlend = (*Builder).unlend
	lend.Owner = func(c Command) *Builder { return c.b }
}

// lend points main at the memory its Cmds lends, or back at the
// Builder's own when the Cmds lends none.
//
//go:noinline
func (b *Builder) lend() {
	b.taken = false
	buf, at, ok := lendCmds(b.dst, lendRoom)
	if !ok || at < headRoom-4 {
		b.unlend()
		return
	}
	if !b.lent {
		b.priv = b.main.b
	}
	b.main.b = buf[at-(headRoom-4) : at+4]
	b.lent = true
}

// unlend moves main, and the command built in it, to the Builder's own
// memory.
func (b *Builder) unlend() {
	if !b.lent {
		return
	}
	m := b.main.b
	p := append(b.priv[:0], m...)
	if l := len(b.built.b); l > 0 && l <= len(m) && &b.built.b[l-1] == &m[len(m)-1] {
		b.built.b = p[len(m)-l:]
	}
	b.main.b, b.priv, b.lent, b.taken = p, nil, false, false
}
