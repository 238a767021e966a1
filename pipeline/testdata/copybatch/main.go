// Command copybatch copies a pipeline.Batch by value: go vet's copylocks
// check must report it (TestBatchCopyVet).
package main

import "github.com/echomq/echomq-go/pipeline"

func main() {
	var orig pipeline.Batch
	orig.Add("PING")
	cp := orig // want "assignment copies lock value"
	cp.Add("PING")
	use(orig)
}

func use(b pipeline.Batch) { _ = b.Len() } // want "passes lock by value"
