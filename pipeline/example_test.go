package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/echomq/echomq-go/cmds"
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

// Typed commands in a Batch: each method returns a handle whose Value,
// after Exec, is the decoded reply, the same under RESP2 and RESP3.
func ExampleBatch_typed() {
	ctx := context.Background()
	c, err := conn.Dial(ctx, conn.Options{Addr: srv.Addr})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	var b pipeline.Batch
	var cb cmds.Builder // builds every command of the batch
	b.Int(cb.Del("example:visits", "example:lb").Build())
	var visits pipeline.Reply[int64]
	for range 1000 {
		visits = b.Int(cb.Incr("example:visits").Build())
	}
	b.Int(cb.Zadd("example:lb", cmds.ScoreMember{Score: 30.5, Member: "ada"}, cmds.ScoreMember{Score: 12, Member: "bob"}).Build())
	top := b.Scored(cb.Zrange("example:lb", "0", "0").Rev().Withscores().Build())
	name := b.String(cb.Get("example:nobody").Build())
	if err := b.Exec(ctx, c); err != nil {
		log.Fatal(err)
	}
	n, err := visits.Value()
	fmt.Println(n, err)
	z, err := top.Value()
	fmt.Println(z, err)
	_, ok, err := name.Value()
	fmt.Println(ok, err)
	// Output:
	// 1000 <nil>
	// [{ada 30.5}] <nil>
	// false <nil>
}

// The README's pipeline: the batch's own Builder, one handle per
// command; a handle read before Exec says so, a missing key is ok ==
// false with no error.
func ExampleBatch_Builder() {
	ctx := context.Background()
	c, err := conn.Connect(ctx, "redis://"+srv.Addr)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Do(ctx, "DEL", "example:hits", "example:name"); err != nil {
		log.Fatal(err)
	}

	var b pipeline.Batch
	var hits pipeline.Reply[int64]
	for range 1000 {
		hits = b.Int(b.Builder().Incr("example:hits").Build())
	}
	cached := b.String(b.Builder().Get("example:name").Build())
	_, err = hits.Value()
	fmt.Println("before Exec:", errors.Is(err, pipeline.ErrNotExecuted))
	if err := b.Exec(ctx, c); err != nil { // one write, 1,001 replies in order
		log.Fatal(err)
	}
	n, err := hits.Value()
	fmt.Println(n, err)
	name, ok, err := cached.Value()
	fmt.Printf("%q %t %v\n", name, ok, err)
	// Output:
	// before Exec: true
	// 1000 <nil>
	// "" false <nil>
}
