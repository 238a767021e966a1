// Command copybatch copies a dispatch.Batch by value: go vet's copylocks
// check must report it (TestBatchCopyVet).
package main

import "github.com/echomq/echomq-go/dispatch"

func main() {
	var orig dispatch.Batch
	orig.Add(dispatch.NewScript("one", "return 1"), nil)
	cp := orig // want "assignment copies lock value"
	cp.Reset()
	use(orig)
}

func use(b dispatch.Batch) { _ = b.Len() } // want "passes lock by value"
