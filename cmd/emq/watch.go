package main

import (
	"context"
	"io"
	"time"

	"github.com/echomq/echomq-go/emq"
)

// watch prints a stats line every interval until ctx ends (SIGINT or
// SIGTERM: its normal end, exit status 0). A reading that fails is one
// line on stderr, and the watch goes on: the Client redials a lost
// server meanwhile.
func watch(ctx context.Context, q *emq.Queue, interval time.Duration, out *printer, stderr io.Writer) int {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		st, err := q.Stats(ctx)
		switch {
		case ctx.Err() != nil:
			return exitOK
		case err != nil:
			fail(stderr, "stats: %v", err)
		default:
			out.statsRow(st)
		}
		select {
		case <-ctx.Done():
			return exitOK
		case <-tick.C:
		}
	}
}
