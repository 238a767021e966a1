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

// The go-redis limiter prints what examples/ratelimit prints (its
// testdata/output.txt), under RESP3 and RESP2, on a private server, so
// that the line counts compared there are of the same program.
func TestRateLimitGoRedis(t *testing.T) {
	firsthour.Prints(t, srv, "../../../../examples/ratelimit/testdata/output.txt", run, func(t *testing.T) {
		if got, err := srv.Do("GET", "rate:ada"); err != nil || got != "6" {
			t.Fatalf("ada's count is %q, %v; want 6", got, err)
		}
	})
}
