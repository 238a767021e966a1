package main

import (
	"os"
	"testing"

	"github.com/echomq/echomq-go/internal/firsthour"
	"github.com/echomq/echomq-go/internal/servertest"
)

var srv *servertest.Server

func TestMain(m *testing.M) {
	os.Exit(servertest.Main(m, &srv, servertest.Options{}))
}

// The limiter prints testdata/output.txt under RESP3 and RESP2, on a
// private server: ada's first five requests allowed, the sixth refused,
// bob counted apart, and a window that ends. (The go-redis version, in
// bench/peers, is tested to print the same.)
func TestRateLimit(t *testing.T) {
	firsthour.Prints(t, srv, "testdata/output.txt", run, func(t *testing.T) {
		if got, err := srv.Do("GET", "rate:ada"); err != nil || got != "6" {
			t.Fatalf("ada's count is %q, %v; want 6", got, err)
		}
		if got, err := srv.Do("TTL", "rate:bob"); err != nil || got == "-1" || got == "-2" {
			t.Fatalf("bob's window has TTL %s, %v; want one", got, err)
		}
	})
}

// The program stays gofmt'd and no longer than the go-redis version
// (bench/peers/cmd/ratelimit-goredis), lines counted as wc -l counts them.
func TestRateLimitLines(t *testing.T) {
	firsthour.NoLonger(t, "main.go", "../../bench/peers/cmd/ratelimit-goredis/main.go")
}
