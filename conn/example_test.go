package conn_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/resp"
)

// A Client: the front door. It redials after faults and gives blocking
// commands a connection of their own.
func ExampleNewClient() {
	ctx := context.Background()
	cl, err := conn.NewClient(ctx, conn.Options{Addr: srv.Addr})
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()

	cl.Do(ctx, "DEL", "example:jobs")
	if _, err := cl.Do(ctx, "RPUSH", "example:jobs", "a", "b"); err != nil {
		log.Fatal(err)
	}
	// BLPOP runs on a dedicated connection; the shared one stays free.
	v, err := cl.Do(ctx, "BLPOP", "example:jobs", "1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(v.Elems[1].Text())

	// Reading in place with DoFunc allocates nothing.
	var buf [64]byte
	err = cl.DoFunc(ctx, resp.Command(buf[:0], "LLEN", "example:jobs"), func(v resp.Value) error {
		fmt.Println(v.Int)
		return nil
	})
	fmt.Println(err)

	// A command that would break the shared connection is refused, and
	// nothing is sent.
	_, err = cl.Do(ctx, "SUBSCRIBE", "news")
	fmt.Println(errors.Is(err, conn.ErrCommandRefused))
	// Output:
	// a
	// 1
	// <nil>
	// true
}

// Dial a single connection, run commands, read typed replies.
func ExampleDial() {
	ctx := context.Background()
	c, err := conn.Dial(ctx, conn.Options{Addr: srv.Addr, ClientName: "example"})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	if _, err := c.Do(ctx, "SET", "example:greeting", "hello"); err != nil {
		log.Fatal(err)
	}
	v, err := c.Do(ctx, "GET", "example:greeting")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(v.Text(), c.Protocol())

	// A server error is an error value; the connection goes on.
	_, err = c.Do(ctx, "INCR", "example:greeting")
	fmt.Println(resp.IsCode(err, "ERR"), c.Err())

	// DoFunc reads the reply in place, without allocating.
	n, err := c.DoInt(ctx, resp.Command(nil, "STRLEN", "example:greeting"))
	fmt.Println(n, err)
	// Output:
	// hello 3
	// true <nil>
	// 5 <nil>
}

// Options from a URL; the password never shows when they are printed.
func ExampleParseURL() {
	o, err := conn.ParseURL("rediss://worker:s3cret@cache.internal:6380/2?client_name=billing&read_timeout=30s")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(o)
	fmt.Println(o.Username, o.Password == "s3cret", o.TLS.ServerName, o.ReadTimeout)

	_, err = conn.ParseURL("redis://h:6379/?protocol=4")
	fmt.Println(err)
	// Output:
	// tcp://cache.internal:6380 user=worker password=REDACTED db=2 protocol=3 tls=true name=billing
	// worker true cache.internal 30s
	// conn: invalid URL option: protocol="4": want 2 or 3
}
