package kv_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/kv"
	"github.com/echomq/echomq-go/pipeline"
)

// The one call: any command built with package cmds runs in one line
// with its typed result, read by the decoder cmds names for its reply;
// a nil comes back as ok == false. In a pipeline, the same command and
// decoder make the typed handle.
func ExampleCall() {
	ctx := context.Background()
	c, err := conn.NewClient(ctx, conn.Options{Addr: srv.Addr})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	var b cmds.Builder // one per goroutine: it reuses its memory
	kv.Del(ctx, c, "visits", "greeting")

	n, err := kv.Call(ctx, c, b.Incrby("visits", 5).Build(), cmds.Int)
	fmt.Println(n, err)
	set, err := kv.Call(ctx, c, b.Set("greeting", "hello").Ex(time.Minute).Build(), cmds.OKOrNil)
	fmt.Println(set, err)
	v, ok, err := kv.CallNull(ctx, c, b.Get("greeting").Build(), cmds.String)
	fmt.Println(v, ok, err)
	_, ok, err = kv.CallNull(ctx, c, b.Get("no such key").Build(), cmds.String)
	fmt.Println(ok, err)

	// The same commands in one pipeline: one write, typed handles.
	var batch pipeline.Batch
	pb := batch.Builder()
	visits := pipeline.Decode(&batch, pb.Incrby("visits", 5).Build(), cmds.Int)
	greeting := pipeline.DecodeNull(&batch, pb.Get("greeting").Build(), cmds.String)
	if err := batch.Exec(ctx, c); err != nil {
		log.Fatal(err)
	}
	fmt.Println(visits.Value())
	fmt.Println(greeting.Value())
	// Output:
	// 5 <nil>
	// true <nil>
	// hello true <nil>
	// false <nil>
	// 10 <nil>
	// hello true <nil>
}
