package pubsub_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/pubsub"
)

// Subscribe on a connection of the subscription's own, publish through
// an ordinary Client, and range over the messages.
func ExampleNew() {
	ctx := context.Background()
	opts := conn.Options{Addr: srv.Addr}
	sub, err := pubsub.New(ctx, pubsub.Options{Options: opts})
	if err != nil {
		log.Fatal(err)
	}
	defer sub.Close()
	if err := sub.Subscribe(ctx, "orders"); err != nil { // confirmed by the server
		log.Fatal(err)
	}
	if err := sub.PSubscribe(ctx, "audit.*"); err != nil {
		log.Fatal(err)
	}

	cl, err := conn.NewClient(ctx, opts)
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	n, _ := pubsub.Publish(ctx, cl, "orders", "order 42 placed")
	fmt.Println("receivers:", n)
	pubsub.Publish(ctx, cl, "audit.login", []byte("alice"))

	got := 0
	for msg, err := range sub.Messages(ctx) {
		if errors.Is(err, pubsub.ErrGap) {
			continue // the connection was lost and restored: messages may be missing
		}
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s %q %s\n", msg.Channel, msg.Pattern, msg.Payload)
		if got++; got == 2 {
			break
		}
	}
	// Output:
	// receivers: 1
	// orders "" order 42 placed
	// audit.login "audit.*" alice
}

// Subscribe with a Client's options in one call, and publish through
// the Client.
func ExampleSubscribe() {
	ctx := context.Background()
	cl, err := conn.Connect(ctx, "redis://"+srv.Addr)
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	sub, err := pubsub.Subscribe(ctx, cl.Options(), "news") // confirmed by the server
	if err != nil {
		log.Fatal(err)
	}
	defer sub.Close()

	if _, err := pubsub.Publish(ctx, cl, "news", "hello"); err != nil {
		log.Fatal(err)
	}
	msg, err := sub.Receive(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %s\n", msg.Channel, msg.Payload)
	// Output:
	// news: hello
}
