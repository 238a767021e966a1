package kv_test

import (
	"context"
	"fmt"
	"log"
	"math"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/kv"
)

// A cache in front of something slow: read through, fill on a miss with
// a TTL, count the hits.
func Example() {
	ctx := context.Background()
	cl, err := conn.NewClient(ctx, conn.Options{Addr: srv.Addr})
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	kv.Del(ctx, cl, "cache:user:42", "stats:hits")

	lookup := func(id int) (string, error) {
		key := fmt.Sprint("cache:user:", id)
		if name, ok, err := kv.Get(ctx, cl, key); err != nil || ok {
			kv.Incr(ctx, cl, "stats:hits")
			return name, err
		}
		name := "Ada Lovelace" // the slow source
		_, err := kv.SetWith(ctx, cl, key, name, kv.SetOptions{TTL: time.Minute})
		return name, err
	}
	for range 3 {
		name, err := lookup(42)
		fmt.Println(name, err)
	}
	hits, _, _ := kv.Get(ctx, cl, "stats:hits")
	ttl, ok, _ := kv.TTL(ctx, cl, "cache:user:42")
	fmt.Println("hits:", hits, "ttl set:", ok && ttl > 59*time.Second)
	// Output:
	// Ada Lovelace <nil>
	// Ada Lovelace <nil>
	// Ada Lovelace <nil>
	// hits: 2 ttl set: true
}

// newExampleClient connects to the package's server.
func newExampleClient() (*conn.Client, context.Context) {
	ctx := context.Background()
	cl, err := conn.NewClient(ctx, conn.Options{Addr: srv.Addr})
	if err != nil {
		log.Fatal(err)
	}
	return cl, ctx
}

// A hash read back as a map, the same under RESP2 and RESP3.
func ExampleHGetAll() {
	cl, ctx := newExampleClient()
	defer cl.Close()
	kv.Del(ctx, cl, "user:7")
	kv.HSetMap(ctx, cl, "user:7", map[string]string{"name": "Grace", "visits": "3"})
	kv.HIncrBy(ctx, cl, "user:7", "visits", 1)
	u, err := kv.HGetAll(ctx, cl, "user:7")
	fmt.Println(u["name"], u["visits"], err)
	_, ok, _ := kv.HGet(ctx, cl, "user:7", "email")
	fmt.Println("email set:", ok)
	// Output:
	// Grace 4 <nil>
	// email set: false
}

// Walk a key space with an iterator; SCAN may repeat a key, so keep a
// set when that matters.
func ExampleScan() {
	cl, ctx := newExampleClient()
	defer cl.Close()
	kv.MSet(ctx, cl, map[string]int{"scan:a": 1, "scan:b": 2, "scan:c": 3})
	seen := map[string]bool{}
	for key, err := range kv.Scan(ctx, cl, kv.ScanOptions{Match: "scan:*"}) {
		if err != nil {
			log.Fatal(err)
		}
		seen[key] = true
	}
	fmt.Println(len(seen), seen["scan:b"])
	// Output:
	// 3 true
}

// A stream with a consumer group: the durable half of the bus. Entries
// wait in the stream until read, and in the group until acknowledged.
func ExampleXReadGroup() {
	cl, ctx := newExampleClient()
	defer cl.Close()
	kv.Del(ctx, cl, "orders")
	if _, err := kv.XGroupCreate(ctx, cl, "orders", "billing", "$"); err != nil {
		log.Fatal(err)
	}
	kv.XAdd(ctx, cl, "orders", "sku", "42", "qty", "1")
	streams, err := kv.XReadGroup(ctx, cl, kv.XReadGroupArgs{
		Group: "billing", Consumer: "worker-1", Streams: []string{"orders"},
		Count: 10, Block: time.Second, // on its own connection: cl stays free
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, st := range streams {
		for _, e := range st.Entries {
			sku, _ := e.Value("sku")
			qty, _ := e.Value("qty")
			fmt.Println(st.Key, sku, qty)
			n, _ := kv.XAck(ctx, cl, st.Key, "billing", e.ID)
			fmt.Println("acked:", n)
		}
	}
	// Output:
	// orders 42 1
	// acked: 1
}

// A hash whose values are of different types, each written without
// strconv.
func ExampleHSetFields() {
	cl, ctx := newExampleClient()
	defer cl.Close()
	kv.Del(ctx, cl, "example:user:7")

	n, err := kv.HSetFields(ctx, cl, "example:user:7", kv.F("name", "Ada"), kv.F("visits", 3), kv.F("score", 4.5))
	fmt.Println(n, err)
	m, err := kv.HMGet(ctx, cl, "example:user:7", "name", "score", "email")
	fmt.Println(m, err) // email is not there
	// Output:
	// 3 <nil>
	// map[name:Ada score:4.5] <nil>
}

// A leaderboard: highest first with scores, a rank, and a range by
// score, the same under RESP2 and RESP3.
func ExampleZRevRangeWithScores() {
	cl, ctx := newExampleClient()
	defer cl.Close()
	kv.Del(ctx, cl, "example:board")

	kv.ZAdd(ctx, cl, "example:board", kv.Z{Member: "ada", Score: 30.5}, kv.Z{Member: "bob", Score: 12}, kv.Z{Member: "cy", Score: 20})
	kv.ZIncrBy(ctx, cl, "example:board", 15, "bob")
	top, err := kv.ZRevRangeWithScores(ctx, cl, "example:board", 0, 1)
	fmt.Println(top, err)
	rank, ok, err := kv.ZRevRank(ctx, cl, "example:board", "cy")
	fmt.Println(rank, ok, err)
	low, err := kv.ZRangeByScore(ctx, cl, "example:board", kv.ScoreRange{Min: math.Inf(-1), Max: 27, MaxExclusive: true})
	fmt.Println(low, err)
	// Output:
	// [{ada 30.5} {bob 27}] <nil>
	// 2 true <nil>
	// [{cy 20}] <nil>
}
