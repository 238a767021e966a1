// Package firsthour tests the programs a newcomer writes in the first
// hour (examples/newcomer, examples/ratelimit, examples/jobs) beside the
// same programs written with another library (go-redis v9, asynq, in
// modules of their own): each prints the same lines on a private server,
// and ours has no more lines than theirs.
package firsthour

import (
	"bytes"
	"context"
	"go/format"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq-go/internal/servertest"
)

// Program is a first-hour program's body: it runs against the server at
// url and prints what it found to w.
type Program func(ctx context.Context, url string, w io.Writer) error

// Prints runs program against srv under RESP3 and RESP2, on an emptied
// server each time, and fails t unless it prints exactly the contents of
// the file at want. check, when not nil, then looks at the server.
func Prints(t *testing.T, srv *servertest.Server, want string, program Program, check func(t *testing.T)) {
	t.Helper()
	prints(t, srv, want, program, check, "", "?protocol=2")
}

// PrintsOnce is Prints for a program that reads no protocol from its URL
// (asynq's): it runs once, on the server's default (RESP3 through
// go-redis).
func PrintsOnce(t *testing.T, srv *servertest.Server, want string, program Program, check func(t *testing.T)) {
	t.Helper()
	prints(t, srv, want, program, check, "")
}

// prints runs program at srv's address with each query.
func prints(t *testing.T, srv *servertest.Server, want string, program Program, check func(t *testing.T), queries ...string) {
	t.Helper()
	servertest.Need(t, srv)
	out, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	for _, query := range queries {
		url := "redis://" + srv.Addr + query
		t.Run(url, func(t *testing.T) {
			srv.Flush(t)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var got strings.Builder
			if err := program(ctx, url, &got); err != nil {
				t.Fatal(err)
			}
			if got.String() != string(out) {
				t.Fatalf("output:\n%s\nwant (%s):\n%s", got.String(), want, out)
			}
			if check != nil {
				check(t)
			}
		})
	}
}

// NoLonger fails t when the Go file at ours has more lines than the one
// at theirs, lines counted as wc -l counts them, after checking that both
// are gofmt'd.
func NoLonger(t *testing.T, ours, theirs string) {
	t.Helper()
	a, b := Lines(t, ours), Lines(t, theirs)
	t.Logf("%s: %d lines; %s: %d", ours, a, theirs, b)
	if a > b {
		t.Fatalf("%s has %d lines, %s %d: want at most as many", ours, a, theirs, b)
	}
}

// Shorter fails t unless the Go file at ours has fewer lines than the one
// at theirs, counted as NoLonger counts them.
func Shorter(t *testing.T, ours, theirs string) {
	t.Helper()
	a, b := Lines(t, ours), Lines(t, theirs)
	t.Logf("%s: %d lines; %s: %d", ours, a, theirs, b)
	if a >= b {
		t.Fatalf("%s has %d lines, %s %d: want fewer", ours, a, theirs, b)
	}
}

// Lines returns how many lines the Go file at path has (its newlines, as
// wc -l counts), after checking that it is gofmt'd.
func Lines(t testing.TB, path string) int {
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
