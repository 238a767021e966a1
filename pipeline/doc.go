// Package pipeline sends many commands over one connection without waiting
// for each reply: Batch for an explicit group of commands executed at
// once, Stream for long runs (millions of commands) with a bounded window
// of commands in flight.
//
// Both keep their replies in send order and hand each command exactly one
// outcome: its own reply (which may be a server error) or the fault that
// broke the connection.
//
// A Batch is used through its address and must not be copied once used:
// go vet reports a copy, and a copy is refused at its first use (its Exec
// and handles fail with ErrCopied, it sends nothing and reads none of the
// original's replies) until its Reset gives it memory of its own. Reply
// handles know the Reset they belong to: one kept past a Reset reads
// ErrStale, however many Resets later.
//
// # Typed commands
//
// A Batch takes the typed commands of package cmds: the method named
// after the reply's Go value (Int, Float, Bool, OK, String, Strings,
// StringMap, Scored, IntOrNil, FloatOrNil; Decode and DecodeNull for any
// other decoder) queues the command and returns a handle, whose Value
// after Exec is the decoded reply, under RESP2 and RESP3 alike:
//
//	var b pipeline.Batch
//	n := b.Int(b.Builder().Incr("visits").Build())
//	if err := b.Exec(ctx, c); err != nil { … }
//	visits, err := n.Value()
//
// Batch.Builder is the batch's own cmds.Builder; any other Builder does
// as well. Handles are values, and a reused Batch and Builder allocate
// nothing per command in steady state (TestAllocsTypedBatch,
// TestAllocsBatchBuilder).
package pipeline
