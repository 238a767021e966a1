package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

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
