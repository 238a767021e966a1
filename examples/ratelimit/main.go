// Command ratelimit is a fixed-window rate limiter: each user may make 5
// requests in a window of a minute that starts at their first, counted on
// the server given by -url or REDIS_URL (default redis://127.0.0.1:6379),
// so that every instance of a service shares the count.
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/kv"
	"github.com/echomq/echomq-go/pipeline"
)

func main() {
	url := flag.String("url", cmp.Or(os.Getenv("REDIS_URL"), "redis://127.0.0.1:6379"), "server URL")
	flag.Parse()
	if err := run(context.Background(), *url, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// limit is how many requests a user may make in one window.
const limit = 5

// allow counts one request of user and reports whether it is within the
// limit and how many the window has left. INCR and EXPIRE NX go in one
// round trip; sent with every request, EXPIRE NX gives the window its end
// even when the first request's was lost. A failed Exec is every reply's
// error, so the replies' errors are the only ones to check.
func allow(ctx context.Context, c *conn.Client, user string) (ok bool, left int64, err error) {
	var b pipeline.Batch
	n := b.Int(b.Builder().Incr("rate:" + user).Build())
	expire := b.Bool(b.Builder().Expire("rate:"+user, time.Minute).Nx().Build())
	_ = b.Exec(ctx, c)
	count, err := n.Value()
	_, expireErr := expire.Value()
	return count <= limit, max(limit-count, 0), cmp.Or(err, expireErr)
}

func run(ctx context.Context, url string, w io.Writer) error {
	c, err := conn.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := kv.Del(ctx, c, "rate:ada", "rate:bob"); err != nil {
		return err
	}

	for i, user := range []string{"ada", "ada", "bob", "ada", "ada", "ada", "ada", "bob"} {
		ok, left, err := allow(ctx, c, user)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "request %d from %s: allowed %t, %d left\n", i+1, user, ok, left)
	}

	ttl, ok, err := kv.TTL(ctx, c, "rate:ada")
	fmt.Fprintln(w, "ada's window ends within a minute:", ok && ttl > 0 && ttl <= time.Minute)
	return err
}
