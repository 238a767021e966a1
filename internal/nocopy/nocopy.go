// Package nocopy holds NoCopy, the field that makes go vet's copylocks
// check report a struct copied by value (as sync.WaitGroup's noCopy
// does), for the types of this module that must not be copied once used
// (pipeline.Batch, dispatch.Batch).
package nocopy

// NoCopy has no size and does nothing; go vet reports a copy of any
// struct holding one by value.
type NoCopy struct{}

// Lock is for go vet.
func (*NoCopy) Lock() {}

// Unlock is for go vet.
func (*NoCopy) Unlock() {}
