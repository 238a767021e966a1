package pipeline

import "github.com/echomq/echomq-go/cmds"

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
// methods (Int, String, …): they copy the command into the batch.
func (b *Batch) Builder() *cmds.Builder {
	b.own()
	if b.cb == nil {
		b.cb = new(cmds.Builder)
	}
	return b.cb
}
