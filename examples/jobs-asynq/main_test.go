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

// The asynq program prints what examples/jobs prints (its
// testdata/output.txt) on a private server, so that the line counts
// compared there are of the same program. asynq reads no protocol from a
// URL (it speaks RESP3 through go-redis): it runs once.
func TestJobsAsynq(t *testing.T) {
	firsthour.PrintsOnce(t, srv, "../jobs/testdata/output.txt", run, nil)
}
