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

// The job program prints testdata/output.txt on a private server: 10,000
// jobs enqueued, a hundred delayed, the duplicate refused, every email
// sent (500 after a retry), every report built and the periodic one run.
// (The asynq version, in examples/jobs-asynq, is tested to print the
// same.)
func TestJobs(t *testing.T) {
	firsthour.Prints(t, srv, "testdata/output.txt", run, nil)
}

// The program stays gofmt'd and shorter than the asynq version, lines
// counted as wc -l counts them.
func TestJobsLines(t *testing.T) {
	firsthour.Shorter(t, "main.go", "../jobs-asynq/main.go")
}
