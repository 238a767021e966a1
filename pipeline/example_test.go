package pipeline_test

import (
	"context"
	"fmt"
	"log"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/pipeline"
)

// A Batch sends many commands in one write and returns their replies in
// order; a server error belongs to its own command only.
func ExampleBatch() {
	ctx := context.Background()
	c, err := conn.Dial(ctx, conn.Options{Addr: srv.Addr})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	var b pipeline.Batch
	b.Add("DEL", "example:n")
	for range 3 {
		b.Add("INCR", "example:n")
	}
	b.Add("HSET", "example:n", "f", "v") // wrong type: a server error
	b.Begin(3)                           // mixed argument types, no allocation
	b.Arg("INCRBY")
	b.Arg("example:n")
	b.ArgInt(10)
	if err := b.Exec(ctx, c); err != nil {
		log.Fatal(err)
	}
	for i := 1; i < b.Len(); i++ {
		if err := b.Err(i); err != nil {
			fmt.Println(i, "error:", err)
			continue
		}
		fmt.Println(i, b.Reply(i).Int)
	}

	// The Batch is reusable: Exec runs the same commands again.
	if err := b.Exec(ctx, c); err != nil {
		log.Fatal(err)
	}
	fmt.Println(b.Reply(5).Int)
	// Output:
	// 1 1
	// 2 2
	// 3 3
	// 4 error: WRONGTYPE Operation against a key holding the wrong kind of value
	// 5 13
	// 13
}
