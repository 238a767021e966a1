package emq_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"slices"
	"sync"
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

// A producer and a consumer, by hand, over a redialing client. The
// server is named by REDIS_URL (the tests point it at their own).
func ExampleOpen() {
	ctx := context.Background()
	opts, err := conn.ParseURL(os.Getenv("REDIS_URL")) // e.g. redis://127.0.0.1:6379
	if err != nil {
		log.Fatal(err)
	}
	cl, err := conn.NewClient(ctx, opts)
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	q, err := emq.Open(ctx, cl, "example-emails") // checks the wire fence
	if err != nil {
		log.Fatal(err)
	}
	id, err := q.Enqueue(ctx, []byte(`{"to":"ada@example.com"}`))
	if err != nil {
		log.Fatal(err)
	}
	job, ok, err := q.Claim(ctx, 30*time.Second)
	if err != nil || !ok {
		log.Fatal("nothing claimed: ", err)
	}
	fmt.Println(job.ID == id, job.Token, string(job.Payload)) // the first claim's token is 1
	fmt.Println(q.Complete(ctx, job.ID, job.Token, 0))
	// Completing again with the spent token is stale: the lease is gone.
	fmt.Println(errors.Is(q.Complete(ctx, job.ID, job.Token, 0), emq.ErrStale))
	// Output:
	// true 1 {"to":"ada@example.com"}
	// <nil>
	// true
}

// A worker with middleware. Run would work until interrupted
// (signal.NotifyContext); here it stops once three jobs are done.
func ExampleWorker() {
	ctx := context.Background()
	opts, err := conn.ParseURL(os.Getenv("REDIS_URL"))
	if err != nil {
		log.Fatal(err)
	}
	cl, err := conn.NewClient(ctx, opts)
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	q, err := emq.Open(ctx, cl, "example-sms")
	if err != nil {
		log.Fatal(err)
	}
	for _, to := range []string{"ada", "bob", "eve"} {
		if _, err := q.Enqueue(ctx, []byte(to)); err != nil {
			log.Fatal(err)
		}
	}
	var mu sync.Mutex
	var sent []string
	done := make(chan struct{})
	counting := func(next emq.Handler) emq.Handler {
		return emq.HandlerFunc(func(ctx context.Context, job *emq.Job) error {
			err := next.ProcessJob(ctx, job)
			mu.Lock()
			if sent = append(sent, string(job.Payload)); len(sent) == 3 {
				close(done)
			}
			mu.Unlock()
			return err
		})
	}
	w, err := emq.NewWorker(q, emq.HandlerFunc(func(ctx context.Context, job *emq.Job) error {
		return nil // send the message
	}), emq.WorkerConfig{Concurrency: 4, Lease: time.Minute, Middleware: []emq.Middleware{counting}})
	if err != nil {
		log.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- w.Run(runCtx) }()
	<-done
	stop()
	fmt.Println(<-ran)
	slices.Sort(sent)
	fmt.Println(sent, w.Stats().Completed)
	// Output:
	// <nil>
	// [ada bob eve] 3
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
