package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/kv"
)

// runCommand runs cfg's command on q and returns the exit status; the
// command's output goes to out, its errors, one line each, to stderr.
func runCommand(ctx context.Context, q *emq.Queue, cfg config, out *printer, stderr io.Writer) int {
	name := cfg.cmd.name
	failed := func(err error) int {
		fail(stderr, "%s: %v", name, err)
		return exitFailed
	}
	switch name {
	case "stats":
		if cfg.watch {
			return watch(ctx, q, cfg.interval, out, stderr)
		}
		st, err := q.Stats(ctx)
		if err != nil {
			return failed(err)
		}
		exists, err := queueExists(ctx, q, st)
		if err != nil {
			return failed(err)
		}
		out.stats(st, exists)
	case "browse":
		page, err := q.Browse(ctx, states[cfg.state], cfg.offset, cfg.count)
		if err != nil {
			return failed(err)
		}
		out.browse(cfg.state, cfg.offset, page)
	case "requeue":
		if len(cfg.ids) == 0 {
			n, err := q.RequeueDead(ctx, emq.DeadFilter{
				ErrorPrefix: cfg.errPrefix, Since: cfg.since, Before: cfg.before, Limit: cfg.limit,
			})
			if err != nil {
				return failed(fmt.Errorf("%w (%d requeued before it)", err, n))
			}
			out.count("requeued", n)
			return exitOK
		}
		done, err := q.RequeueBatch(ctx, cfg.ids)
		if err != nil {
			return failed(err)
		}
		var missed []string
		for i, ok := range done {
			if !ok {
				missed = append(missed, cfg.ids[i])
			}
		}
		result := func(i int) string {
			if done[i] {
				return "requeued"
			}
			return "not dead"
		}
		out.perID(cfg.ids, result, result)
		if len(missed) > 0 {
			return failed(fmt.Errorf("%d of %d jobs not dead: %s", len(missed), len(cfg.ids), list(missed)))
		}
	case "delete":
		was, err := q.DeleteBatch(ctx, cfg.ids)
		if err != nil {
			return failed(err)
		}
		var missed []string
		for i, s := range was {
			if s == "" {
				missed = append(missed, cfg.ids[i])
			}
		}
		result := func(i int) string {
			if was[i] == "" {
				return "not found"
			}
			return string(was[i])
		}
		out.perID(cfg.ids, func(i int) string {
			if was[i] == "" {
				return "not found"
			}
			return "was " + string(was[i])
		}, result)
		if len(missed) > 0 {
			return failed(fmt.Errorf("%d of %d jobs not found: %s", len(missed), len(cfg.ids), list(missed)))
		}
	case "trim":
		maxAge, maxCount := cfg.maxAge, cfg.maxCount
		if cfg.all {
			maxAge, maxCount = 0, -1
		}
		n, err := q.TrimDead(ctx, maxAge, maxCount)
		if err != nil {
			return failed(fmt.Errorf("%w (%d removed before it)", err, n))
		}
		out.count("removed", n)
	case "cancel":
		return cancelJobs(ctx, q, cfg.ids, out, stderr)
	case "workers":
		return listWorkers(ctx, q, out, stderr)
	case "schedules":
		return listSchedules(ctx, q, out, stderr)
	case "unique":
		return uniqueOwner(ctx, q, cfg.key, out, stderr)
	case "limits":
		return limits(ctx, q, cfg, out, stderr)
	case "pause", "resume":
		var err error
		if name == "pause" {
			err = q.Pause(ctx)
		} else {
			err = q.Resume(ctx)
		}
		if err != nil {
			return failed(err)
		}
		out.paused(name == "pause")
	}
	return exitOK
}

// queueExists reports whether any of the queue's sets or its meta hash
// is on the server. Stats counts the sets, so only an all-zero reading
// that is not paused needs the look.
func queueExists(ctx context.Context, q *emq.Queue, st emq.QueueStats) (bool, error) {
	if st.Pending+st.Active+st.Delayed+st.Dead > 0 || st.Paused {
		return true, nil
	}
	k := q.Keys()
	n, err := kv.Exists(ctx, q.Sender(), k.Pending, k.Active, k.Delayed, k.Dead, k.Meta)
	return n > 0, err
}

// list joins ids for a message, the first five of them.
func list(ids []string) string {
	if len(ids) > 5 {
		return strings.Join(ids[:5], ", ") + fmt.Sprintf(" and %d more", len(ids)-5)
	}
	return strings.Join(ids, ", ")
}
