package jobs

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// Handler runs a task. The *Task a [Server] passes is the handler's only
// until it returns (the Server reuses it for its next job; its Body, the
// job's payload, stays the handler's to keep). Its result, when not nil, is kept for the job's
// result retention (see [Client.Wait]); a nil error completes the job, an
// error retries it (with backoff, dead once its retries are used up), and
// an error matching [ErrSkipRetry] sends it to dead at once.
type Handler interface {
	ProcessTask(ctx context.Context, t *Task) ([]byte, error)
}

// HandlerFunc is a function as a [Handler].
type HandlerFunc func(ctx context.Context, t *Task) ([]byte, error)

// ProcessTask calls f.
func (f HandlerFunc) ProcessTask(ctx context.Context, t *Task) ([]byte, error) { return f(ctx, t) }

// Middleware wraps a Handler, as net/http middleware wraps an
// http.Handler.
type Middleware func(Handler) Handler

// ErrSkipRetry, returned (or wrapped) by a handler, ends its job in dead
// at once, whatever retries it has left.
var ErrSkipRetry = errors.New("jobs: skip retry")

// ErrUnknownType is matched by the *[UnknownTypeError] of a task whose
// type no pattern of a Mux matches, when the Mux has no fallback.
var ErrUnknownType = errors.New("jobs: no handler for the task type")

// UnknownTypeError is the error of a task no handler takes: its job goes
// to dead at once with this error's text (it is never retried, as no
// later attempt would find a handler either). A raw job (no envelope) has
// Type "".
type UnknownTypeError struct{ Type string }

func (e *UnknownTypeError) Error() string {
	if e.Type == "" {
		return "jobs: no handler for a job without an envelope (no default handler)"
	}
	return fmt.Sprintf("jobs: no handler for task type %q", clip(e.Type))
}

// Is reports whether target is [ErrUnknownType] or [ErrSkipRetry].
func (e *UnknownTypeError) Is(target error) bool {
	return target == ErrUnknownType || target == ErrSkipRetry
}

// Mux routes a task to a handler by its type, as http.ServeMux routes a
// request by its path. A pattern that ends in ':' (or any of ".:/") is a
// prefix: "email:" takes "email:send" and "email:digest"; any other is
// exact. The exact pattern wins over the prefixes, and the longest prefix
// over shorter ones. A task no pattern takes, or a raw job (a peer's
// payload without an envelope), goes to the fallback ([Mux.HandleDefault]),
// or, without one, fails with an *[UnknownTypeError]: dead at once.
//
// Middleware ([Mux.Use]) wraps every route and the fallback, the first
// outermost, and applies to the routes registered before and after it.
// Register routes before the Mux serves; a Mux is safe for concurrent use
// once serving.
type Mux struct {
	mu       sync.Mutex
	exact    map[string]Handler
	prefixes []route // longest first
	fallback Handler
	mw       []Middleware
	table    atomic.Pointer[table] // the routes wrapped; nil after a change
}

// table is a Mux's routes with the middleware applied, built once per
// change and read without a lock.
type table struct {
	exact    map[string]Handler
	prefixes []route
	fallback Handler // the fallback, or unknown
}

type route struct {
	pattern string
	h       Handler
}

// NewMux returns an empty Mux.
func NewMux() *Mux { return &Mux{exact: map[string]Handler{}} }

// isPrefix reports whether pattern is a prefix pattern.
func isPrefix(pattern string) bool {
	return strings.ContainsAny(pattern[len(pattern)-1:], ".:/")
}

// Handle registers h for pattern. An empty pattern, a nil handler or a
// pattern registered twice panics, as http.ServeMux does.
func (m *Mux) Handle(pattern string, h Handler) {
	if pattern == "" || h == nil {
		panic("jobs: Handle needs a pattern and a handler")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if isPrefix(pattern) {
		for _, r := range m.prefixes {
			if r.pattern == pattern {
				panic("jobs: pattern " + pattern + " registered twice")
			}
		}
		m.prefixes = append(m.prefixes, route{pattern, h})
		sort.SliceStable(m.prefixes, func(i, j int) bool { return len(m.prefixes[i].pattern) > len(m.prefixes[j].pattern) })
	} else {
		if _, ok := m.exact[pattern]; ok {
			panic("jobs: pattern " + pattern + " registered twice")
		}
		m.exact[pattern] = h
	}
	m.table.Store(nil)
}

// HandleFunc registers f for pattern.
func (m *Mux) HandleFunc(pattern string, f func(ctx context.Context, t *Task) ([]byte, error)) {
	m.Handle(pattern, HandlerFunc(f))
}

// HandleDefault sets the fallback: the handler of the tasks no pattern
// takes and of raw jobs (a peer's payload, Body untouched, Type "").
func (m *Mux) HandleDefault(h Handler) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fallback = h
	m.table.Store(nil)
}

// Use appends middleware, wrapping every handler of the Mux.
func (m *Mux) Use(mw ...Middleware) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mw = append(m.mw, mw...)
	m.table.Store(nil)
}

// unknown is the handler of a task no route takes.
var unknown = HandlerFunc(func(_ context.Context, t *Task) ([]byte, error) {
	return nil, &UnknownTypeError{Type: t.Type}
})

// wrap applies the middleware to h.
func (m *Mux) wrap(h Handler) Handler {
	for i := len(m.mw) - 1; i >= 0; i-- {
		h = m.mw[i](h)
	}
	return h
}

// build returns the routes wrapped, making them after a change.
func (m *Mux) build() *table {
	if t := m.table.Load(); t != nil {
		return t
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	t := &table{exact: make(map[string]Handler, len(m.exact)), prefixes: make([]route, len(m.prefixes))}
	for p, h := range m.exact {
		t.exact[p] = m.wrap(h)
	}
	for i, r := range m.prefixes {
		t.prefixes[i] = route{r.pattern, m.wrap(r.h)}
	}
	f := m.fallback
	if f == nil {
		f = unknown
	}
	t.fallback = m.wrap(f)
	m.table.Store(t)
	return t
}

// Handler returns the handler (middleware applied) that runs t, and the
// pattern that matched ("" for the fallback).
func (m *Mux) Handler(t *Task) (h Handler, pattern string) {
	tb := m.build()
	if !t.Raw {
		if h, ok := tb.exact[t.Type]; ok {
			return h, t.Type
		}
		for _, r := range tb.prefixes {
			if strings.HasPrefix(t.Type, r.pattern) {
				return r.h, r.pattern
			}
		}
	}
	return tb.fallback, ""
}

// ProcessTask runs t on the handler its type routes to.
func (m *Mux) ProcessTask(ctx context.Context, t *Task) ([]byte, error) {
	h, _ := m.Handler(t)
	return h.ProcessTask(ctx, t)
}
