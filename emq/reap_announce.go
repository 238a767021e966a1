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
	if limit < 0 || maxAttempts < 0 {
		return 0, &ArgError{Arg: "limit or maxAttempts", Reason: "negative"}
	}
	o := getOp("reap_announce")
	o.args.Key(q.keys.Active)
	o.args.Key(q.keys.Pending)
	o.args.Key(q.keys.Dead)
	o.args.Key(q.keys.Base)
	o.args.ArgInt(scriptInt(limit))
	o.args.ArgInt(scriptInt(maxAttempts))
	o.n = 0
	err := q.reaper.Eval(ctx, scriptReapAnnounce, &o.args, o.intFn)
	n := o.n
	putOp(o, err)
	return int(n), wrapErr("reap_announce", err)
}
