// Command newcomer is a read-through cache, a profile hash, a leaderboard,
// a SCAN, pub/sub and a pipeline of 1,000 INCRs, on the server given by
// -url or REDIS_URL (default redis://127.0.0.1:6379).
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
	"github.com/echomq/echomq-go/pubsub"
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
func cachedName(ctx context.Context, c *conn.Client, id string) (name string, hit bool, err error) {
	if name, ok, err := kv.Get(ctx, c, "name:"+id); err != nil || ok {
		return name, ok, err
	}
	name = "Ada Lovelace (" + id + ")" // the slow lookup
	_, err = kv.SetWith(ctx, c, "name:"+id, name, kv.SetOptions{TTL: time.Minute})
	return name, false, err
}

func run(ctx context.Context, url string, w io.Writer) error {
	c, err := conn.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := kv.Del(ctx, c, "name:42", "user:42", "board", "hits"); err != nil {
		return err
	}

	for range 2 {
		name, hit, err := cachedName(ctx, c, "42")
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "cache: %s (hit: %t)\n", name, hit)
	}

	if _, err := kv.HSetFields(ctx, c, "user:42", kv.F("name", "Ada"), kv.F("visits", 1), kv.F("score", 4.5)); err != nil {
		return err
	}
	profile, err := kv.HGetAll(ctx, c, "user:42")
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "profile:", profile)

	_, err = kv.ZAdd(ctx, c, "board", kv.Z{Member: "ada", Score: 30.5}, kv.Z{Member: "bob", Score: 12}, kv.Z{Member: "cy", Score: 20})
	if err != nil {
		return err
	}
	top, err := kv.ZRevRangeWithScores(ctx, c, "board", 0, 2)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "leaderboard:", top)

	for key, err := range kv.Scan(ctx, c, kv.ScanOptions{Match: "user:*"}) {
		if err != nil {
			return err
		}
		fmt.Fprintln(w, "scan:", key)
	}

	sub, err := pubsub.Subscribe(ctx, c.Options(), "news")
	if err != nil {
		return err
	}
	defer sub.Close()
	if _, err := pubsub.Publish(ctx, c, "news", "hello, subscribers"); err != nil {
		return err
	}
	msg, err := sub.Receive(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "pubsub: %s: %s\n", msg.Channel, msg.Payload)

	var b pipeline.Batch
	var hits pipeline.Reply[int64]
	for range 1000 {
		hits = b.Int(b.Builder().Incr("hits").Build())
	}
	if err := b.Exec(ctx, c); err != nil {
		return err
	}
	n, err := hits.Value()
	fmt.Fprintln(w, "pipeline: hits =", n)
	return err
}
