package pubsub_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/pubsub"
)

// Publish allocates nothing; receiving a message costs well under one
// allocation (names interned, small payloads sharing 32 KiB blocks).
// Every goroutine's allocations count: the reader's too.
func TestAllocsPublishReceive(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation budgets are not measured under -race (sync.Pool drops items)")
	}
	servertest.Need(t, srv)
	ctx := context.Background()
	sub := newSub(t, pubsub.Options{})
	if err := sub.Subscribe(ctx, "alloc"); err != nil {
		t.Fatal(err)
	}
	pub, err := conn.Dial(ctx, conn.Options{Addr: srv.Addr})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	payload := []byte("a payload of 32 bytes, more or l")

	publish := func() {
		if _, err := pubsub.Publish(ctx, pub, "alloc", payload); err != nil {
			t.Fatal(err)
		}
		if _, err := pubsub.Publish(ctx, pub, "alloc", "text"); err != nil {
			t.Fatal(err)
		}
	}
	receive := func() {
		for range 2 {
			if _, err := sub.Receive(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	for range 100 {
		publish()
		receive()
	}
	// Published and received in turn: Publish's budget.
	if n := testing.AllocsPerRun(1000, func() { publish(); receive() }); n > 0.1 {
		t.Errorf("Publish + Receive of 2 messages: %v allocations, budget 0.1", n)
	}

	// A batch of 1,000 in flight at once, received after.
	var b pipeline.Batch
	for i := range 1000 {
		b.Add("PUBLISH", "alloc", strconv.Itoa(i))
	}
	run := func() {
		if err := b.Exec(ctx, pub); err != nil {
			t.Fatal(err)
		}
		for range 1000 {
			if _, err := sub.Receive(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	run()
	if n := testing.AllocsPerRun(20, run) / 1000; n > 0.05 {
		t.Errorf("%v allocations per message received, budget 0.05", n)
	}
}
