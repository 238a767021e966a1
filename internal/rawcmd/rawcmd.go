// Package rawcmd lets the module's own command encoder (package cmds)
// make a resp.Cmd of bytes it has already encoded, without package resp
// checking or copying them again. It is a hook and nothing more: package
// resp sets New in its init, and internal/ keeps it out of users' reach,
// so that a resp.Cmd is still built only by encoders that know its bytes
// hold exactly one command.
package rawcmd

// New is set by package resp to its constructor, of type
//
//	func(b []byte) resp.Cmd
//
// which returns a Cmd viewing b, a complete command (an array header and
// that many bulk strings). It is typed any because package resp imports this
// one; the caller asserts its type once.
var New any

// Failed is set by package resp to its constructor of a Cmd that carries
// err and no bytes, of type
//
//	func(err error) resp.Cmd
//
// so that a command that cannot be sent (stale, built without what it
// needs) is refused with its own error.
var Failed any

// Lend is set by package resp to a function of type
//
//	func(c *resp.Cmds, room int) (buf []byte, at int, ok bool)
//
// which lends c's spare memory to package cmds' Builder bound to it (a
// pipeline.Batch's own): buf is c's bytes to their capacity, grown to
// room bytes past at, c's length, where the next command goes. ok is
// false when c is not taking whole commands (a command begun with Begin,
// or an error): the Builder then builds in its own memory.
var Lend any

// Take is set by package resp to a function of type
//
//	func(c *resp.Cmds, p []byte) bool
//
// which appends p, a whole command, to c without copying it when p is
// already where c's next command goes (built there in memory Lend lent),
// and reports whether it did.
var Take any
