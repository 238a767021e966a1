package emq_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/signal"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/resp"
)

func ExampleNewKeys() {
	k, err := emq.NewKeys("quotes")
	if err != nil {
		panic(err)
	}
	fmt.Println(k.Pending)
	fmt.Println(k.Job("JOB0KHTOWnGLuC"))
	fmt.Println(k.Slot == emq.Slot(k.Job("JOB0KHTOWnGLuC")), k.Slot)

	_, err = emq.NewKeys("a{b}")
	fmt.Println(errors.Is(err, emq.ErrInvalidQueue), err)
	// Output:
	// emq:{quotes}:pending
	// emq:{quotes}:job:JOB0KHTOWnGLuC
	// true 3378
	// true emq: invalid queue name "a{b}": contains '{' at byte 1
}

func ExampleParseID() {
	ns, sf, err := emq.ParseID("JOB0KHTOWnGLuC")
	if err != nil {
		panic(err)
	}
	ms, node, seq := emq.SplitSnowflake(sf)
	fmt.Println(ns, sf)
	fmt.Println(emq.SnowflakeTime(sf), ms, node, seq)

	_, _, err = emq.ParseID("JOBAzL8n0Y58m8")
	fmt.Println(err)
	// Output:
	// JOB 274557032793636864
	// 2026-01-27 15:11:37.641 +0000 UTC 65459497641 0 0
	// emq: invalid branded id "JOBAzL8n0Y58m8": value does not fit 63 bits
}

func ExampleFormatID() {
	id, err := emq.FormatID("QTE", emq.MaxSnowflake)
	fmt.Println(id, err)
	// Output:
	// QTEAzL8n0Y58m7 <nil>
}

func ExampleIDGenerator() {
	gen, err := emq.NewIDGenerator(emq.JobNamespace, emq.DefaultNode())
	if err != nil {
		panic(err)
	}
	a, b := gen.Next(), gen.Next()
	fmt.Println(len(a), emq.Namespace(a), a < b)
	// Output:
	// 14 JOB true
}

func ExampleSlot() {
	fmt.Println(emq.Slot("123456789"))
	fmt.Println(emq.Hashtag("emq:{orders}:pending"), emq.Slot("emq:{orders}:pending"))
	fmt.Println(emq.Hashtag("foo{}{bar}"))
	// Output:
	// 12739
	// orders 105
	// foo{}{bar}
}

// A producer and a consumer, by hand. (It needs a server on
// 127.0.0.1:6379, so it is compiled but not run.)
func ExampleOpen() {
	ctx := context.Background()
	c, err := conn.Dial(ctx, conn.Options{Addr: "127.0.0.1:6379"})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	q, err := emq.Open(ctx, c, "emails") // checks the wire fence
	if err != nil {
		panic(err)
	}
	id, err := q.Enqueue(ctx, []byte(`{"to":"ada@example.com"}`))
	if err != nil {
		panic(err)
	}
	job, ok, err := q.Claim(ctx, 30*time.Second)
	if err != nil || !ok {
		panic("nothing claimed")
	}
	fmt.Println(job.ID == id, job.Token) // the first claim's token is 1
	if err := q.Complete(ctx, job.ID, job.Token, 0); errors.Is(err, emq.ErrStale) {
		fmt.Println("the lease was lost: the job runs again elsewhere")
	}
}

// A worker with middleware, run until interrupted. (It needs a server, so
// it is compiled but not run.)
func ExampleWorker() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	c, err := conn.Dial(ctx, conn.Options{Addr: "127.0.0.1:6379"})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	q, err := emq.Open(ctx, c, "emails")
	if err != nil {
		panic(err)
	}
	logging := func(next emq.Handler) emq.Handler {
		return emq.HandlerFunc(func(ctx context.Context, job *emq.Job) error {
			err := next.ProcessJob(ctx, job)
			log.Printf("job %s attempt %d: %v", job.ID, job.Token, err)
			return err
		})
	}
	w, err := emq.NewWorker(q, emq.HandlerFunc(func(ctx context.Context, job *emq.Job) error {
		return nil // send the email
	}), emq.WorkerConfig{Concurrency: 16, Lease: time.Minute, Middleware: []emq.Middleware{logging}})
	if err != nil {
		panic(err)
	}
	if err := w.Run(ctx); err != nil {
		log.Print(err)
	}
}

func ExampleChain() {
	trace := func(name string) emq.Middleware {
		return func(next emq.Handler) emq.Handler {
			return emq.HandlerFunc(func(ctx context.Context, job *emq.Job) error {
				fmt.Println("enter", name)
				defer fmt.Println("leave", name)
				return next.ProcessJob(ctx, job)
			})
		}
	}
	h := emq.Chain(emq.HandlerFunc(func(ctx context.Context, job *emq.Job) error {
		fmt.Printf("handle %s\n", job.Payload)
		return nil
	}), trace("outer"), trace("inner"))
	h.ProcessJob(context.Background(), &emq.Job{ID: "JOB0KHTOWnGLuC", Payload: []byte("hi"), Token: 1})
	// Output:
	// enter outer
	// enter inner
	// handle hi
	// leave inner
	// leave outer
}

func ExampleScriptError() {
	// What EnqueueID returns for a QTE-namespaced id: the server's text,
	// byte for byte, matching ErrKind.
	var err error = &emq.ScriptError{Script: "enqueue", Err: &resp.ServerError{Msg: "EMQKIND job id must be JOB-namespaced"}}
	fmt.Println(err)
	fmt.Println(errors.Is(err, emq.ErrKind), errors.Is(err, emq.ErrArg))

	err = &emq.FenceError{Server: "echomq:7.0.0", Client: emq.Version}
	fmt.Println(errors.Is(err, emq.ErrFence), err)
	// Output:
	// EMQKIND job id must be JOB-namespaced
	// true false
	// true emq: wire fence: the server holds "echomq:7.0.0" in {emq}:version, this client speaks "echomq:6.0.0": another major version
}
