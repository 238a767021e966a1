package emq

import (
	"context"

	"github.com/echomq/echomq-go/dispatch"
)

// scriptReapAnnounce is reap with each death announced (job system, J3):
// run as a script, whatever the queue's executor, as reap is.
var scriptReapAnnounce = dispatch.NewScript("reap_announce", source("reap_announce"))

// ReapAnnounce reaps as [Queue.Reap] does (the same keys, rows and count)
// and publishes "dead" on the [Keys.DoneChannel] of each job it ends in
// dead, in the same step, so that a waiter hears of a death by lease as
// it hears of one by finish or cancel.
func (q *Queue) ReapAnnounce(ctx context.Context, limit, maxAttempts int) (int, error) {
	return q.reap(ctx, scriptReapAnnounce, limit, maxAttempts)
}
