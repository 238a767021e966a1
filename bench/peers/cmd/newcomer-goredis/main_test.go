package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq-go/internal/servertest"
)

var srv *servertest.Server

func TestMain(m *testing.M) {
	os.Exit(servertest.Main(m, &srv, servertest.Options{}))
}

// The go-redis program prints what examples/newcomer prints (its
// testdata/output.txt), under RESP3 and RESP2, on a private server, so
// that the line counts compared in examples/newcomer are of the same
// program.
func TestNewcomerGoRedis(t *testing.T) {
	servertest.Need(t, srv)
	want, err := os.ReadFile("../../../../examples/newcomer/testdata/output.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, url := range []string{"redis://" + srv.Addr, "redis://" + srv.Addr + "?protocol=2"} {
		t.Run(url, func(t *testing.T) {
			srv.Flush(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var out strings.Builder
			if err := run(ctx, url, &out); err != nil {
				t.Fatal(err)
			}
			if out.String() != string(want) {
				t.Fatalf("output:\n%s\nwant:\n%s", out.String(), want)
			}
			if got, err := srv.Do("TTL", "name:42"); err != nil || got == "-1" || got == "-2" {
				t.Fatalf("the cached name has TTL %s, %v; want one", got, err)
			}
		})
	}
}
