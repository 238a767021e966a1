package pipeline

import (
	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/internal/lend"
	"github.com/echomq/echomq-go/resp"
)

// Builder returns the batch's own cmds.Builder, for the typed commands
// queued in it, so that a batch needs no Builder beside it:
//
//	var b pipeline.Batch
//	n := b.Int(b.Builder().Incr("visits").Build())
//
// It is the same Builder at every call, made on first use and kept by
// Reset, so building into it allocates nothing in steady state. Like
// the Batch it is not safe for concurrent use; a Command it builds is
// valid until it starts the next one, which is no matter for the typed
// methods (Int, String, …): they queue it at once.
//
// The Builder builds each command where the batch's next command goes,
// so that the typed methods queue its own commands without copying
// them; anything else added to the batch (a raw command, another
// Builder's) first moves a command it has open or built there into the
// Builder's own memory. A batch whose Builder was asked for takes its
// raw commands by Add's general path.
func (b *Batch) Builder() *cmds.Builder {
	b.own()
	if b.cb == nil {
		b.cb = new(cmds.Builder)
		bind(b.cb, &b.cmds)
		b.fast = nil // Add's lean path would write where b.cb builds
	}
	return b.cb
}

var (
	bind   = lend.Bind.(func(*cmds.Builder, *resp.Cmds))
	unlend = lend.Unlend.(func(*cmds.Builder))
	owner  = lend.Owner.(func(cmds.Command) *cmds.Builder)
)

// unlend moves what the batch's Builder has in the batch's spare memory
// into its own, before something else is written there.
func (b *Batch) unlend() {
	if b.cb != nil {
		unlend(b.cb)
	}
}
