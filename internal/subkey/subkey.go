// Package subkey hands this module's encoders the constructor of
// package submit's submission that no user has: one with its facts
// given (known where the bytes were encoded), and the marks only the
// module sets (Plain, the commands hooks see). Package submit sets
// Access in its init; package wire takes it in its own (it imports
// submit, so submit's init has run before).
package subkey

import "github.com/echomq/echomq-go/cmds"

// Funcs is what package submit registers, over its Cmds (T).
type Funcs[T any] struct {
	// Make is the submission of n commands encoded in b, with its facts
	// (nil: unknown) and marks.
	Make func(b []byte, n int, facts []cmds.Fact, plain bool, seen int32) T
	// Seen returns the mark of the commands hooks see.
	Seen func(c T) int32
}

// Access is a Funcs[submit.Cmds], set by package submit.
var Access any
