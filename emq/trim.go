package emq

import (
	"context"
	"time"
)

// trimChunk is the most dead jobs one trim_dead call removes.
const trimChunk = 1000

// TrimDead removes dead jobs, their ids and their rows, oldest death
// first: those that died at least maxAge ago (on the server's clock),
// then those beyond the newest maxCount. A negative maxAge or maxCount
// is no bound of that kind: TrimDead(ctx, 30*24*time.Hour, -1) keeps a
// month, TrimDead(ctx, -1, 1000) the newest thousand, TrimDead(ctx, 0,
// -1) and TrimDead(ctx, -1, 0) remove every dead job.
//
// It runs the trim_dead script repeatedly, each call removing at most
// 1,000 jobs, so a huge dead set never blocks the server, and returns how
// many it removed. When ctx ends, those removed so far are counted in
// the result returned with the error.
func (q *Queue) TrimDead(ctx context.Context, maxAge time.Duration, maxCount int) (int, error) {
	total := 0
	for {
		n, err := q.trimDead(ctx, maxAge, maxCount, trimChunk)
		total += n
		if err != nil || n < trimChunk {
			return total, err
		}
	}
}

// trimDead is one trim_dead call removing at most limit jobs; with no
// bound it sends nothing.
func (q *Queue) trimDead(ctx context.Context, maxAge time.Duration, maxCount, limit int) (int, error) {
	age := int64(-1)
	if maxAge >= 0 {
		age, _ = millis("maxAge", maxAge, false)
	}
	count := int64(-1)
	if maxCount >= 0 {
		count = scriptInt(maxCount)
	}
	if age < 0 && count < 0 {
		return 0, nil
	}
	o := getOp("trim_dead")
	o.args.Key(q.keys.Dead)
	o.args.Key(q.keys.Base)
	o.args.ArgInt(age)
	o.args.ArgInt(count)
	o.args.ArgInt(scriptInt(limit))
	n, err := q.evalInt(ctx, scriptTrimDead, o)
	putOp(o, err)
	return int(n), err
}
