package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/jobs"
)

// cancelJobs cancels each job of ids (the job system's cancel: dead with
// "cancelled"); a finished or missing one is reported and fails the run.
func cancelJobs(ctx context.Context, q *emq.Queue, ids []string, out *printer, stderr io.Writer) int {
	res := make([]string, len(ids))
	var missed []string
	for i, id := range ids {
		was, err := q.Cancel(ctx, id, jobs.CancelReason)
		switch {
		case err == nil:
			res[i] = "was " + string(was)
		case errors.Is(err, emq.ErrFinished):
			res[i] = "finished (" + string(was) + ")"
			missed = append(missed, id)
		case errors.Is(err, emq.ErrNotFound):
			res[i] = "not found"
			missed = append(missed, id)
		default:
			fail(stderr, "cancel: %v", err)
			return exitFailed
		}
	}
	text := func(i int) string { return res[i] }
	out.perID(ids, text, text)
	if len(missed) > 0 {
		fail(stderr, "cancel: %d of %d jobs not cancelled: %s", len(missed), len(ids), list(missed))
		return exitFailed
	}
	return exitOK
}

// listWorkers prints the live workers of the queue's registry.
func listWorkers(ctx context.Context, q *emq.Queue, out *printer, stderr io.Writer) int {
	ws, err := q.Workers(ctx, 1000)
	if err != nil {
		fail(stderr, "workers: %v", err)
		return exitFailed
	}
	if out.json {
		type worker struct {
			ID     string            `json:"id"`
			Fields map[string]string `json:"fields"`
		}
		list := make([]worker, len(ws))
		for i, w := range ws {
			list[i] = worker{w.ID, w.Fields}
		}
		out.emit(struct {
			Queue   string   `json:"queue"`
			Workers []worker `json:"workers"`
		}{out.queue, list})
		return exitOK
	}
	fmt.Fprintf(out.w, "workers %d\n", len(ws))
	for _, w := range ws {
		keys := make([]string, 0, len(w.Fields))
		for k := range w.Fields {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + "=" + w.Fields[k]
		}
		fmt.Fprintf(out.w, "%s %s\n", w.ID, strings.Join(parts, " "))
	}
	return exitOK
}

// listSchedules prints the queue's cron schedules with their last slot.
func listSchedules(ctx context.Context, q *emq.Queue, out *printer, stderr io.Writer) int {
	ss, err := q.CronSchedules(ctx)
	if err != nil {
		fail(stderr, "schedules: %v", err)
		return exitFailed
	}
	if out.json {
		type schedule struct {
			Name   string `json:"name"`
			LastMs int64  `json:"last_ms"`
		}
		list := make([]schedule, len(ss))
		for i, s := range ss {
			list[i] = schedule{s.Name, s.Last.UnixMilli()}
		}
		out.emit(struct {
			Queue     string     `json:"queue"`
			Schedules []schedule `json:"schedules"`
		}{out.queue, list})
		return exitOK
	}
	fmt.Fprintf(out.w, "schedules %d\n", len(ss))
	for _, s := range ss {
		fmt.Fprintf(out.w, "%s last=%s\n", s.Name, s.Last.UTC().Format(time.RFC3339Nano))
	}
	return exitOK
}

// uniqueOwner prints the job holding key and its state; a free key fails
// the run.
func uniqueOwner(ctx context.Context, q *emq.Queue, key string, out *printer, stderr io.Writer) int {
	id, st, err := q.UniqueOwner(ctx, key)
	free := errors.Is(err, emq.ErrNoOwner)
	if err != nil && !free {
		fail(stderr, "unique: %v", err)
		return exitFailed
	}
	if out.json {
		out.emit(struct {
			Queue string `json:"queue"`
			Hash  string `json:"hash"`
			Owner string `json:"owner"`
			State string `json:"state"`
		}{out.queue, emq.UniqueHash(key), id, string(st)})
	} else if !free {
		fmt.Fprintf(out.w, "%s %s\n", id, st)
	}
	if free {
		fail(stderr, "unique: the key is free (hash %s)", emq.UniqueHash(key))
		return exitFailed
	}
	return exitOK
}

// limits prints the queue's limits, after setting those given.
func limits(ctx context.Context, q *emq.Queue, cfg config, out *printer, stderr io.Writer) int {
	l, err := q.Limits(ctx)
	if err == nil && (cfg.active >= 0 || cfg.rate >= 0 || cfg.per >= 0) {
		if cfg.active >= 0 {
			l.Active = cfg.active
		}
		if cfg.rate >= 0 {
			l.Rate = cfg.rate
		}
		if cfg.per >= 0 {
			l.Per = cfg.per
		}
		err = q.SetLimits(ctx, l)
	}
	if err != nil {
		fail(stderr, "limits: %v", err)
		return exitFailed
	}
	if out.json {
		out.emit(struct {
			Queue  string `json:"queue"`
			Active int    `json:"active"`
			Rate   int    `json:"rate"`
			PerMs  int64  `json:"per_ms"`
		}{out.queue, l.Active, l.Rate, l.Per.Milliseconds()})
		return exitOK
	}
	fmt.Fprintf(out.w, "active %d\nrate %d\nper %v\n", l.Active, l.Rate, l.Per)
	return exitOK
}
