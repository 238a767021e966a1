package dispatch_test

import (
	"context"
	"fmt"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/dispatch"
	"github.com/echomq/echomq-go/resp"
)

// A Script knows its SHA1 and the command a native executor sends; Args
// holds the keys, then the arguments, already encoded.
func ExampleNewScript() {
	s := dispatch.NewScript("enqueue", "return 1")
	fmt.Println(s.Name(), s.SHA(), s.NativeCommand())

	var a dispatch.Args
	a.Key("emq:{q}:job:JOB0KHTOWnGLuC")
	a.Key("emq:{q}:pending")
	a.Arg("JOB0KHTOWnGLuC")
	a.ArgInt(42)
	fmt.Println(a.NumKeys(), a.NumArgs())
	// Output:
	// enqueue e0e1f9fabfc9d4800c877a703b823ac0578ff8db EMQ.ENQUEUE
	// 2 2
}

// Eval runs one call; the reply is read inside the callback.
func ExampleScripted_Eval() {
	ctx := context.Background()
	c, err := conn.Dial(ctx, conn.Options{Addr: "127.0.0.1:6379"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	x := dispatch.NewScripted(c)
	enqueue := dispatch.NewScript("enqueue", enqueueLua)

	var a dispatch.Args
	a.Key("emq:{q}:job:JOB0KHTOWnGLuC")
	a.Key("emq:{q}:pending")
	a.Arg("JOB0KHTOWnGLuC")
	a.Arg("hello")
	err = x.Eval(ctx, enqueue, &a, func(v resp.Value) error {
		fmt.Println("enqueued:", v.Int) // 1, or 0 for a duplicate
		return nil
	})
	if err != nil {
		fmt.Println(err) // e.g. EMQKIND job id must be JOB-namespaced
	}
}

// EvalBatch sends many calls as one pipeline; one Args is reused.
func ExampleScripted_EvalBatch() {
	ctx := context.Background()
	c, err := conn.Dial(ctx, conn.Options{Addr: "127.0.0.1:6379"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	x := dispatch.NewScripted(c)
	echo := dispatch.NewScript("echo", "return ARGV[1]")

	var b dispatch.Batch
	var a dispatch.Args
	for i := range 3 {
		a.Reset()
		a.ArgInt(int64(i))
		b.Add(echo, &a)
	}
	if err := x.EvalBatch(ctx, &b); err != nil {
		fmt.Println(err)
		return
	}
	for i, v := range b.Replies() {
		fmt.Println(i, v, b.Err(i))
	}
	fmt.Printf("%+v\n", x.Stats()) // {Loads:1 NoScripts:3 EvalSHAs:6} on a cold server
}
