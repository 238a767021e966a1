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

// The program prints testdata/output.txt under RESP3 and RESP2, on a
// private server: a cache miss then a hit, the hash, the leaderboard
// highest first with its scores, the one key SCAN matches, the message,
// and the last of 1,000 INCRs. (The go-redis version, in bench/peers,
// is tested to print the same.)
func TestNewcomer(t *testing.T) {
	firsthour.Prints(t, srv, "testdata/output.txt", run, func(t *testing.T) {
		if got, err := srv.Do("TTL", "name:42"); err != nil || got == "-1" || got == "-2" {
			t.Fatalf("the cached name has TTL %s, %v; want one", got, err)
		}
	})
}

// goRedis is the same program written with go-redis v9, in its own
// module (bench/peers), whose test runs it and checks that it prints
// testdata/output.txt too.
const goRedis = "../../bench/peers/cmd/newcomer-goredis/main.go"

// The program stays gofmt'd and no longer than the go-redis version,
// lines counted as wc -l counts them.
func TestNewcomerLines(t *testing.T) {
	firsthour.NoLonger(t, "main.go", goRedis)
}
