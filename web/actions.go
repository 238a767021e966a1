package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/echomq/echomq-go/emq"
)

// bulkMax is the most ids one bulk request carries.
const bulkMax = 1000

// bulkTime bounds a filter's bulk action (requeue by filter, trim): it
// runs in chunks of at most 1,000 jobs per atomic call, and stops at
// this time, reporting what it did; pressing again goes on.
const bulkTime = 10 * time.Second

// done redirects back (303) to the page the form names in its back
// field, else the queue page, with a message.
func (h *Handler) done(w http.ResponseWriter, r *http.Request, e *queueEntry, name, msg string) {
	if e != nil {
		e.invalidate()
	}
	base := h.opts.Prefix + "/queues/" + url.PathEscape(name)
	back, q := base, url.Values{}
	// Only a page of this queue (never another site: no open redirect).
	if u, err := url.Parse(r.PostForm.Get("back")); err == nil && u.Scheme == "" && u.Host == "" &&
		(u.EscapedPath() == base || u.EscapedPath() == base+"/dead" || u.EscapedPath() == base+"/lanes" ||
			strings.HasPrefix(u.EscapedPath(), base+"/jobs/") || strings.HasPrefix(u.EscapedPath(), base+"/flows/")) {
		back, q = u.EscapedPath(), u.Query()
	}
	q.Set("msg", msg)
	http.Redirect(w, r, back+"?"+q.Encode(), http.StatusSeeOther)
}

func (h *Handler) doPause(pause bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		e, name, err := h.entry(r)
		if err != nil {
			fail(w, err)
			return
		}
		msg := "paused: claims answer nothing until resumed"
		if pause {
			err = e.q.Pause(r.Context())
		} else {
			err, msg = e.q.Resume(r.Context()), "resumed"
		}
		if err != nil {
			fail(w, err)
			return
		}
		h.done(w, r, e, name, msg)
	}
}

// cancelReason is the error a job cancelled from the dashboard dies
// with (the consumer running it hears of it and ends its handler).
const cancelReason = "cancelled"

func (h *Handler) doJob(verb string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		e, name, id, err := h.jobEntry(r)
		if err != nil {
			fail(w, err)
			return
		}
		var msg string
		switch verb {
		case "requeue":
			err, msg = e.q.Requeue(r.Context(), id), id+" requeued: now pending"
		case "run":
			err, msg = e.q.RunNow(r.Context(), id), id+" moved to pending: it runs next in id order"
		case "delete":
			var was emq.State
			was, err = e.q.Delete(r.Context(), id)
			msg = fmt.Sprintf("%s deleted (it was %s)", id, was)
		case "cancel":
			var was emq.State
			was, err = e.q.Cancel(r.Context(), id, cancelReason)
			msg = fmt.Sprintf("%s cancelled (it was %s): now dead", id, was)
		}
		if err != nil {
			if errors.Is(err, emq.ErrNotFound) {
				err = fmt.Errorf("job %s: %w", id, errNoJob)
			}
			fail(w, err)
			return
		}
		h.done(w, r, e, name, msg)
	}
}

// doBulk runs requeue, run (delayed → pending now) or delete over the ids selected (the id fields), at
// most bulkMax, each id checked before anything is sent; emq sends them
// 1,000 per atomic call.
func (h *Handler) doBulk(w http.ResponseWriter, r *http.Request) {
	e, name, err := h.entry(r)
	if err != nil {
		fail(w, err)
		return
	}
	ids := r.PostForm["id"]
	switch {
	case len(ids) == 0:
		fail(w, badf("no job selected"))
		return
	case len(ids) > bulkMax:
		fail(w, badf("%d jobs selected: at most %d per request", len(ids), bulkMax))
		return
	}
	for _, id := range ids {
		if !emq.ValidID(id) {
			fail(w, badf("%q is not a job id", clip(id, 32)))
			return
		}
	}
	var msg string
	switch verb := r.PostForm.Get("verb"); verb {
	case "run":
		done, err := e.q.RunNowBatch(r.Context(), ids)
		if err != nil {
			fail(w, err)
			return
		}
		msg = fmt.Sprintf("moved %d of %d to pending (the others were not delayed)", countTrue(done), len(ids))
	case "requeue":
		done, err := e.q.RequeueBatch(r.Context(), ids)
		if err != nil {
			fail(w, err)
			return
		}
		msg = fmt.Sprintf("requeued %d of %d (the others were not dead)", countTrue(done), len(ids))
	case "delete":
		was, err := e.q.DeleteBatch(r.Context(), ids)
		if err != nil {
			fail(w, err)
			return
		}
		n := 0
		for _, s := range was {
			if s != "" {
				n++
			}
		}
		msg = fmt.Sprintf("deleted %d of %d", n, len(ids))
	default:
		fail(w, badf("verb=%q: want requeue, run or delete", clip(verb, 20)))
		return
	}
	h.done(w, r, e, name, msg)
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// doRequeueDead requeues the dead jobs a filter selects (prefix, older,
// newer), with emq.RequeueDead: 1,000 dead ids examined per atomic call,
// for at most bulkTime.
func (h *Handler) doRequeueDead(w http.ResponseWriter, r *http.Request) {
	h.deadByFilter(w, r, "requeued", (*emq.Queue).RequeueDead)
}

// deadByFilter runs fn (RequeueDead, DeleteDead) over the dead jobs the
// form's filter selects, for at most bulkTime, and reports what it did.
func (h *Handler) deadByFilter(w http.ResponseWriter, r *http.Request, did string, fn func(*emq.Queue, context.Context, emq.DeadFilter) (int, error)) {
	e, name, err := h.entry(r)
	if err != nil {
		fail(w, err)
		return
	}
	st, err := e.stats(r.Context(), 0)
	if err != nil {
		fail(w, err)
		return
	}
	f, err := filterOf(r.PostForm, st.Time)
	if err != nil {
		fail(w, err)
		return
	}
	df := emq.DeadFilter{ErrorPrefix: f.Prefix}
	if f.Since >= 0 {
		df.Since = time.UnixMilli(f.Since)
	}
	if f.Before >= 0 {
		df.Before = time.UnixMilli(f.Before)
	}
	ctx, cancel := context.WithTimeout(r.Context(), bulkTime)
	defer cancel()
	n, err := fn(e.q, ctx, df)
	msg := fmt.Sprintf("%s %d dead jobs", did, n)
	if err != nil {
		if !errors.Is(err, context.DeadlineExceeded) {
			fail(w, fmt.Errorf("%w (%d %s before it)", err, n, did))
			return
		}
		msg += " (stopped after " + bulkTime.String() + ": press again for the rest)"
	}
	h.done(w, r, e, name, msg)
}

// doTrim removes dead jobs older than max-age and beyond max-count (or
// all), with emq.TrimDead: 1,000 per atomic call, for at most bulkTime.
func (h *Handler) doTrim(w http.ResponseWriter, r *http.Request) {
	e, name, err := h.entry(r)
	if err != nil {
		fail(w, err)
		return
	}
	age, count := time.Duration(-1), -1
	if r.PostForm.Get("all") == "1" {
		count = 0
	}
	if s := r.PostForm.Get("max-age"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			fail(w, badf("max-age=%q: want a duration such as 720h", clip(s, 32)))
			return
		}
		age = d
	}
	if s := r.PostForm.Get("max-count"); s != "" {
		c, err := strconv.Atoi(s)
		if err != nil || c < 0 {
			fail(w, badf("max-count=%q: want a count of 0 or more", clip(s, 32)))
			return
		}
		count = c
	}
	if age < 0 && count < 0 {
		fail(w, badf("trim needs max-age, max-count or all"))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), bulkTime)
	defer cancel()
	n, err := e.q.TrimDead(ctx, age, count)
	msg := fmt.Sprintf("trimmed %d dead jobs", n)
	if err != nil {
		if !errors.Is(err, context.DeadlineExceeded) {
			fail(w, fmt.Errorf("%w (%d trimmed before it)", err, n))
			return
		}
		msg += " (stopped after " + bulkTime.String() + ": press again for the rest)"
	}
	h.done(w, r, e, name, msg)
}
