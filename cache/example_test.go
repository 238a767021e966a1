package cache_test

import (
	"context"
	"fmt"
	"time"

	"github.com/echomq/echomq-go/cache"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/resp"
)

func Example() {
	ctx := context.Background()
	c, err := cache.New(ctx, cache.Options{Options: conn.Options{Addr: exampleAddr()}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	// A write through the cache: the next read sees it.
	if _, err := c.Do(ctx, "SET", "greeting", "hello"); err != nil {
		fmt.Println(err)
		return
	}
	buf := make([]byte, 0, 64)
	for range 3 {
		// The first read goes to the server; the others are served
		// from memory, without allocating.
		buf, _, err = c.GetInto(ctx, buf[:0], "greeting", time.Minute)
		if err != nil {
			fmt.Println(err)
			return
		}
	}
	fmt.Println(string(buf))

	// Any cacheable read, with a callback.
	c.Do(ctx, "HSET", "user:1", "name", "ada")
	c.DoCached(ctx, time.Minute, func(v resp.Value) error {
		fmt.Println(v.Text())
		return nil
	}, "HGET", "user:1", "name")

	s := c.Stats()
	fmt.Println("hits", s.Hits, "misses", s.Misses)
	// Output:
	// hello
	// ada
	// hits 2 misses 2
}

// exampleAddr is the package test server's address.
func exampleAddr() string {
	if srv == nil {
		return "127.0.0.1:6379"
	}
	srv.Do("FLUSHALL")
	return srv.Addr
}
