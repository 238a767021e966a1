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

// The go-redis program prints what examples/newcomer prints (its
// testdata/output.txt), under RESP3 and RESP2, on a private server, so
// that the line counts compared in examples/newcomer are of the same
// program.
func TestNewcomerGoRedis(t *testing.T) {
	firsthour.Prints(t, srv, "../../../../examples/newcomer/testdata/output.txt", run, func(t *testing.T) {
		if got, err := srv.Do("TTL", "name:42"); err != nil || got == "-1" || got == "-2" {
			t.Fatalf("the cached name has TTL %s, %v; want one", got, err)
		}
	})
}
