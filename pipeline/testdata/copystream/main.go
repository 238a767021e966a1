// Command copystream copies a pipeline.Stream by value: go vet's
// copylocks check must report it (TestStreamCopied).
package main

import (
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/pipeline"
)

func main() {
	var s conn.SendFunc
	st := pipeline.NewStream(s, nil, pipeline.StreamOptions{})
	cp := *st // want "assignment copies lock value"
	_ = cp.Sent()
}
