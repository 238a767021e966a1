package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/echomq/echomq-go/emq"
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
		out.stats(st)
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
		out.perID("requeued", cfg.ids, func(i int) string {
			if done[i] {
				return "requeued"
			}
			return "not dead"
		})
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
		out.perID("was", cfg.ids, func(i int) string {
			if was[i] == "" {
				return "not found"
			}
			return string(was[i])
		})
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

// list joins ids for a message, the first five of them.
func list(ids []string) string {
	if len(ids) > 5 {
		return strings.Join(ids[:5], ", ") + fmt.Sprintf(" and %d more", len(ids)-5)
	}
	return strings.Join(ids, ", ")
}
