package emqotel_test

import (
	"context"
	"fmt"
	"log"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/echomq/echomq-go/conn"
	emqotel "github.com/echomq/echomq-go/contrib/otel"
	"github.com/echomq/echomq-go/pipeline"
)

// Tracing a Client: one span per command, one per pipeline.
func ExampleHook() {
	ctx := context.Background()
	exp := tracetest.NewInMemoryExporter() // in a program: an OTLP exporter
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(ctx)

	opts := conn.Options{Addr: srv.Addr}
	opts.Hooks = append(opts.Hooks, emqotel.Hook(opts, emqotel.Options{TracerProvider: tp}))
	cl, err := conn.NewClient(ctx, opts)
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()

	cl.Do(ctx, "SET", "example:otel", 1)
	var b pipeline.Batch
	b.Add("INCR", "example:otel")
	b.Add("INCR", "example:otel")
	if err := b.Exec(ctx, cl); err != nil {
		log.Fatal(err)
	}
	for _, s := range exp.GetSpans() {
		fmt.Println(s.Name)
	}
	// Output:
	// SET
	// BATCH INCR
}
