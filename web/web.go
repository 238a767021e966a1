package web

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/jobs"
)

// Options configures a dashboard ([New]).
type Options struct {
	// Sender is the server connection: a *conn.Client, or a
	// *cluster.Client for a cluster (each queue's keys share one slot).
	Sender conn.Sender
	// Prefix is the path the handler is mounted under, "" or "/emq"
	// (no trailing slash): mount it with mux.Handle(Prefix+"/", h). Every
	// link and asset it serves is under Prefix.
	Prefix string
	// Queues names the queues shown, each checked with emq.ValidQueue.
	Queues []string
	// Registry also shows the queues of [RegistryKey], which producers
	// and consumers maintain with [RegisterQueues]. The dashboard never
	// scans the keyspace: a queue neither listed nor registered is not
	// shown, and its pages answer 404.
	Registry bool
	// ReadOnly serves no action at all: no POST route exists, and no
	// button is shown. New sets it by itself when the server is a
	// replica (INFO replication role:slave).
	ReadOnly bool
	// Middleware wraps every route, pages and actions alike: the host's
	// authentication (say, a check of a session or of basic auth that
	// answers 401 or redirects). nil is none.
	Middleware func(http.Handler) http.Handler
	// StatsTTL is how long a queue's counts are reused for every viewer
	// (0: the default, 1s; negative: never reused).
	StatsTTL time.Duration
	// SampleEvery is the sampler's interval (default 5s) and Samples how
	// many it keeps per queue (default 120: ten minutes).
	SampleEvery time.Duration
	Samples     int
	// Counters, when set, returns a queue's running totals of completed
	// and failed jobs (an in-process worker's emq.WorkerStats, say): the
	// chart then shows throughput and failures per minute. Without it the
	// chart shows what the sets tell: the dead set's growth and the net
	// drain, since the wire keeps no count of completions.
	Counters func(queue string) (completed, failed uint64, ok bool)
	// Sections adds pages (types, schedules, workers, …) to the
	// navigation; see [Section].
	Sections []Section
	// Schedulers are this process's job schedulers: the schedules page
	// shows each registered schedule's spec, zone and next slot beside
	// the server's last slot (emq:{q}:cron keeps only that).
	Schedulers []*jobs.Scheduler
	// PollEvery is how often an open page refreshes its counts (default
	// 2s).
	PollEvery time.Duration

	// sampled, when set (by tests), is told each sampler tick's count of
	// samples added.
	sampled func(added int)
}

// Section is a page added to the dashboard by another package: the
// extension point for what later issues add (task types, schedules,
// unique locks, workers, lanes, flows). Its Handler serves GET requests
// under Prefix + "/x/" + Path and returns its body; the dashboard puts
// it into its layout, so it gets the navigation, the headers and the
// host's middleware. A Section has no actions of its own.
type Section struct {
	Path  string // a path segment: "types", "schedules"
	Title string // the navigation's label
	// Render writes the section's HTML body for r (html/template output,
	// escaped by the section).
	Render func(ctx context.Context, r *http.Request) (HTMLBody, error)
}

// HTMLBody is a section's rendered body: HTML the section has escaped.
type HTMLBody string

// Handler is the dashboard: an http.Handler. Close stops its sampler.
type Handler struct {
	opts  Options
	st    *store
	smp   *sampler
	mux   *http.ServeMux
	root  http.Handler
	cop   *http.CrossOriginProtection
	close sync.Once
}

// New builds the dashboard and starts its sampler (stopped by Close). It
// checks every name of opts.Queues and reads the server's role once.
func New(ctx context.Context, opts Options) (*Handler, error) {
	if opts.Sender == nil {
		return nil, errors.New("web: Options.Sender is nil")
	}
	if opts.Prefix != "" && (!strings.HasPrefix(opts.Prefix, "/") || strings.HasSuffix(opts.Prefix, "/")) {
		return nil, fmt.Errorf("web: Options.Prefix %q: want \"\" or a path like /emq", opts.Prefix)
	}
	for _, q := range opts.Queues {
		if err := emq.ValidQueue(q); err != nil {
			return nil, fmt.Errorf("web: Options.Queues: %w", err)
		}
	}
	for _, s := range opts.Sections {
		if s.Path == "" || strings.ContainsAny(s.Path, "/?#") || s.Render == nil {
			return nil, fmt.Errorf("web: Section %q: want a path segment and a Render", s.Path)
		}
	}
	if opts.StatsTTL == 0 {
		opts.StatsTTL = time.Second
	}
	if opts.SampleEvery <= 0 {
		opts.SampleEvery = 5 * time.Second
	}
	if opts.Samples <= 1 {
		opts.Samples = 120
	}
	if opts.PollEvery <= 0 {
		opts.PollEvery = 2 * time.Second
	}
	if !opts.ReadOnly {
		replica, err := isReplica(ctx, opts.Sender)
		if err != nil {
			return nil, fmt.Errorf("web: reading the server's role: %w", err)
		}
		opts.ReadOnly = replica
	}
	h := &Handler{opts: opts, cop: http.NewCrossOriginProtection()}
	h.st = newStore(opts.Sender, opts.Queues, opts.Registry, opts.StatsTTL)
	h.smp = &sampler{st: h.st, every: opts.SampleEvery, size: opts.Samples, counters: opts.Counters, rings: map[string]*ring{}, ticked: opts.sampled}
	h.cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "cross-origin request refused", http.StatusForbidden)
	}))
	h.routes()
	var root http.Handler = h.mux
	if opts.Middleware != nil {
		root = opts.Middleware(root)
	}
	if opts.Prefix != "" {
		root = http.StripPrefix(opts.Prefix, root)
	}
	h.root = headers(root)
	h.smp.start()
	return h, nil
}

// isReplica reports whether the server is a replica.
func isReplica(ctx context.Context, s conn.Sender) (bool, error) {
	v, err := s.Do(ctx, "INFO", "replication")
	if err != nil {
		return false, err
	}
	return strings.Contains(string(v.VerbatimText()), "role:slave"), nil
}

// ReadOnly reports whether the dashboard serves no action (set by
// Options.ReadOnly, or found at New: the server is a replica).
func (h *Handler) ReadOnly() bool { return h.opts.ReadOnly }

// ServeHTTP serves the dashboard.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.root.ServeHTTP(w, r) }

// Close stops the sampler and waits for its goroutine. The Sender stays
// the caller's.
func (h *Handler) Close() error {
	h.close.Do(h.smp.stop)
	return nil
}

// csp allows the dashboard's own script, styles and images, nothing
// inline, no frame around it.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// headers sets the security headers of every response.
func headers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", csp)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// csrfCookie holds the token every action must carry in its csrf form
// field: random per browser, HttpOnly, SameSite=Strict.
const csrfCookie = "emq_csrf"

// token returns the request's CSRF token, setting a new cookie when it
// has none.
func (h *Handler) token(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) == 64 {
		return c.Value
	}
	var b [32]byte
	rand.Read(b[:])
	tok := hex.EncodeToString(b[:])
	path := h.opts.Prefix
	if path == "" {
		path = "/"
	}
	http.SetCookie(w, &http.Cookie{
		Name: csrfCookie, Value: tok, Path: path, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	return tok
}

// maxForm bounds an action's body.
const maxForm = 1 << 20

// action wraps an action's handler: POST only (by its route), refused
// 403 from another origin (Origin, Sec-Fetch-Site: net/http's
// CrossOriginProtection) or without the cookie's token in the csrf form
// field, before anything is read or changed.
func (h *Handler) action(fn http.HandlerFunc) http.Handler {
	return h.cop.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxForm)
		if err := r.ParseForm(); err != nil {
			http.Error(w, "bad form: "+err.Error(), http.StatusBadRequest)
			return
		}
		c, err := r.Cookie(csrfCookie)
		got := r.PostForm.Get("csrf")
		if err != nil || len(c.Value) != 64 || subtle.ConstantTimeCompare([]byte(c.Value), []byte(got)) != 1 {
			http.Error(w, "missing or wrong CSRF token: reload the page and try again", http.StatusForbidden)
			return
		}
		fn(w, r)
	}))
}

// routes registers every page, and the actions unless read-only.
func (h *Handler) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", h.overview)
	m.HandleFunc("GET /static/{file}", h.static)
	m.HandleFunc("GET /api/overview", h.apiOverview)
	m.HandleFunc("GET /api/queues/{queue}", h.apiQueue)
	m.HandleFunc("GET /queues/{queue}", h.queuePage)
	m.HandleFunc("GET /queues/{queue}/chart.svg", h.chart)
	m.HandleFunc("GET /queues/{queue}/jobs/{id}", h.jobPage)
	m.HandleFunc("GET /queues/{queue}/jobs/{id}/payload", h.payloadRaw)
	m.HandleFunc("GET /queues/{queue}/dead", h.deadPage)
	for _, s := range h.opts.Sections {
		m.HandleFunc("GET /x/"+s.Path, h.section(s))
	}
	h.routeJobSystem(m)
	if !h.opts.ReadOnly {
		m.Handle("POST /queues/{queue}/pause", h.action(h.doPause(true)))
		m.Handle("POST /queues/{queue}/resume", h.action(h.doPause(false)))
		m.Handle("POST /queues/{queue}/trim", h.action(h.doTrim))
		m.Handle("POST /queues/{queue}/jobs/{id}/requeue", h.action(h.doJob("requeue")))
		m.Handle("POST /queues/{queue}/jobs/{id}/delete", h.action(h.doJob("delete")))
		m.Handle("POST /queues/{queue}/jobs/{id}/run", h.action(h.doJob("run")))
		m.Handle("POST /queues/{queue}/jobs/{id}/cancel", h.action(h.doJob("cancel")))
		m.Handle("POST /queues/{queue}/bulk", h.action(h.doBulk))
		m.Handle("POST /queues/{queue}/requeue-dead", h.action(h.doRequeueDead))
	}
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such page", http.StatusNotFound)
	})
	h.mux = m
}

// fail answers an error: 400 for bad input (an invalid queue name or id,
// a bad cursor or parameter), 404 for an unknown queue or job, 500 for a
// failed read, as plain text (nosniff), never echoing more than a clipped
// argument.
func fail(w http.ResponseWriter, err error) {
	var bad *badInput
	switch {
	case errors.As(err, &bad), errors.Is(err, emq.ErrInvalidQueue), errors.Is(err, emq.ErrInvalidID), errors.Is(err, emq.ErrArg):
		http.Error(w, err.Error(), http.StatusBadRequest)
	case errors.Is(err, errUnknownQueue), errors.Is(err, errNoJob), errors.Is(err, emq.ErrNotFound):
		http.Error(w, err.Error(), http.StatusNotFound)
	case errors.Is(err, emq.ErrNotDead), errors.Is(err, emq.ErrNotDelayed), errors.Is(err, emq.ErrFinished):
		http.Error(w, err.Error(), http.StatusConflict)
	default:
		http.Error(w, "server error: "+err.Error(), http.StatusInternalServerError)
	}
}

// badInput is a request parameter the dashboard refuses (400).
type badInput struct{ msg string }

func (e *badInput) Error() string { return e.msg }

func badf(format string, args ...any) error { return &badInput{fmt.Sprintf(format, args...)} }

// errNoJob is a valid id that names no job of the queue.
var errNoJob = errors.New("no such job")
