// Package lend lets package pipeline bind a Batch's own cmds.Builder to
// the Batch's commands, so that a typed command is built where the
// Batch's next command goes and queued without a copy. It is a hook and
// nothing more: package cmds sets its functions in its init (typed any,
// as package cmds imports none of pipeline's), and internal/ keeps them
// out of users' reach.
package lend

// Bind is set by package cmds to a function of type
//
//	func(b *cmds.Builder, c *resp.Cmds)
//
// which binds b to c: each command b starts is built in c's spare memory
// (when c lends it), where Command.AppendTo(c) then takes it in place.
var Bind any

// Unlend is set by package cmds to a function of type
//
//	func(b *cmds.Builder)
//
// which moves the command b has in the memory c lent (open, built or
// queued) into b's own memory, before anything else is written to c.
var Unlend any

// Owner is set by package cmds to a function of type
//
//	func(c cmds.Command) *cmds.Builder
//
// which returns the Builder that built c.
var Owner any
