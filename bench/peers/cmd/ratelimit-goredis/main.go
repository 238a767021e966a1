// Command ratelimit-goredis is examples/ratelimit written with go-redis
// v9: a fixed-window rate limiter (5 requests a minute per user, the
// window starting at their first), on the server given by -url or
// REDIS_URL (default redis://127.0.0.1:6379).
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

	"github.com/redis/go-redis/v9"
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
// even when the first request's was lost. Exec returns the first failed
// command's error.
func allow(ctx context.Context, rdb *redis.Client, user string) (ok bool, left int64, err error) {
	pipe := rdb.Pipeline()
	n := pipe.Incr(ctx, "rate:"+user)
	pipe.ExpireNX(ctx, "rate:"+user, time.Minute)
	if _, err := pipe.Exec(ctx); err != nil {
		return false, 0, err
	}
	count := n.Val()
	return count <= limit, max(limit-count, 0), nil
}

func run(ctx context.Context, url string, w io.Writer) error {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return err
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	if err := rdb.Del(ctx, "rate:ada", "rate:bob").Err(); err != nil {
		return err
	}

	for i, user := range []string{"ada", "ada", "bob", "ada", "ada", "ada", "ada", "bob"} {
		ok, left, err := allow(ctx, rdb, user)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "request %d from %s: allowed %t, %d left\n", i+1, user, ok, left)
	}

	ttl, err := rdb.TTL(ctx, "rate:ada").Result()
	fmt.Fprintln(w, "ada's window ends within a minute:", ttl > 0 && ttl <= time.Minute)
	return err
}
