package cmds

import "time"

// sample builds one command with sample arguments (gen_samples_test.go).
type sample struct {
	name string
	min  func(b *Builder) Command // required arguments only
	// max: every option the server has (has reports whether the server
	// is one of the tables named), the first of each choice
	max func(b *Builder, has func(servers ...string) bool) Command
	// more: one more build for each other choice of a slot, with the
	// required choices
	more []func(b *Builder, has func(servers ...string) bool) Command
}

var sampleTime = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
