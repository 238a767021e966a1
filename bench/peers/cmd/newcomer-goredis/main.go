// Command newcomer-goredis is examples/newcomer written with go-redis v9:
// a read-through cache, a profile hash, a leaderboard, a SCAN, pub/sub
// and a pipeline of 1,000 INCRs, on the server given by -url or
// REDIS_URL (default redis://127.0.0.1:6379).
package main

import (
	"cmp"
	"context"
	"errors"
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

// cachedName reads a name through the cache: from the server when it is
// there (hit), else from the slow source, kept for a minute.
func cachedName(ctx context.Context, rdb *redis.Client, id string) (name string, hit bool, err error) {
	if name, err := rdb.Get(ctx, "name:"+id).Result(); !errors.Is(err, redis.Nil) {
		return name, err == nil, err
	}
	name = "Ada Lovelace (" + id + ")" // the slow lookup
	err = rdb.Set(ctx, "name:"+id, name, time.Minute).Err()
	return name, false, err
}

func run(ctx context.Context, url string, w io.Writer) error {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return err
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	if err := rdb.Del(ctx, "name:42", "user:42", "board", "hits").Err(); err != nil {
		return err
	}

	for range 2 {
		name, hit, err := cachedName(ctx, rdb, "42")
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "cache: %s (hit: %t)\n", name, hit)
	}

	if err := rdb.HSet(ctx, "user:42", "name", "Ada", "visits", 1, "score", 4.5).Err(); err != nil {
		return err
	}
	profile, err := rdb.HGetAll(ctx, "user:42").Result()
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "profile:", profile)

	err = rdb.ZAdd(ctx, "board", redis.Z{Member: "ada", Score: 30.5}, redis.Z{Member: "bob", Score: 12}, redis.Z{Member: "cy", Score: 20}).Err()
	if err != nil {
		return err
	}
	top, err := rdb.ZRevRangeWithScores(ctx, "board", 0, 2).Result()
	if err != nil {
		return err
	}
	board := make([]string, len(top)) // redis.Z prints its Score first
	for i, z := range top {
		board[i] = fmt.Sprintf("{%v %v}", z.Member, z.Score)
	}
	fmt.Fprintln(w, "leaderboard:", board)

	iter := rdb.Scan(ctx, 0, "user:*", 0).Iterator()
	for iter.Next(ctx) {
		fmt.Fprintln(w, "scan:", iter.Val())
	}
	if err := iter.Err(); err != nil {
		return err
	}

	sub := rdb.Subscribe(ctx, "news")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil { // the server's confirmation
		return err
	}
	if err := rdb.Publish(ctx, "news", "hello, subscribers").Err(); err != nil {
		return err
	}
	msg, err := sub.ReceiveMessage(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "pubsub: %s: %s\n", msg.Channel, msg.Payload)

	var hits *redis.IntCmd
	if _, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for range 1000 {
			hits = p.Incr(ctx, "hits")
		}
		return nil
	}); err != nil {
		return err
	}
	fmt.Fprintln(w, "pipeline: hits =", hits.Val())
	return nil
}
