package main

import (
	"bytes"
	"context"
	"go/format"
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

// The program prints testdata/output.txt under RESP3 and RESP2, on a
// private server: a cache miss then a hit, the hash, the leaderboard
// highest first with its scores, the one key SCAN matches, the message,
// and the last of 1,000 INCRs. (The go-redis version, in bench/peers,
// is tested to print the same.)
func TestNewcomer(t *testing.T) {
	servertest.Need(t, srv)
	want, err := os.ReadFile("testdata/output.txt")
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

// goRedis is the same program written with go-redis v9, in its own
// module (bench/peers), whose test runs it and checks that it prints
// testdata/output.txt too.
const goRedis = "../../bench/peers/cmd/newcomer-goredis/main.go"

// The program stays gofmt'd and no longer than the go-redis version,
// lines counted as wc -l counts them.
func TestNewcomerLines(t *testing.T) {
	ours, theirs := lines(t, "main.go"), lines(t, goRedis)
	t.Logf("main.go: %d lines; go-redis v9: %d", ours, theirs)
	if ours > theirs {
		t.Fatalf("main.go has %d lines, the go-redis version %d: want at most as many", ours, theirs)
	}
}

// lines returns how many lines the Go file at path has, after checking
// that it is gofmt'd.
func lines(t *testing.T, path string) int {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	formatted, err := format.Source(src)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(src, formatted) {
		t.Fatalf("%s is not gofmt'd", path)
	}
	return bytes.Count(src, []byte("\n"))
}
