package cmds

import "time"

// sample builds one command with sample arguments (gen_samples_test.go).
type sample struct {
	name string
	min  func(b *Builder) Command // required arguments only
	max  func(b *Builder) Command // every option, the first of each choice
}

var sampleTime = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
