package web

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/echomq/echomq-go/emq"
)

//go:embed templates/*.html static/*
var assets embed.FS

// pages holds one template per page, each with the layout.
var pages = func() map[string]*template.Template {
	funcs := template.FuncMap{
		"ms":    fmtMillis,
		"bytes": fmtBytes,
		"clip":  func(s string) string { return clip(strings.ToValidUTF8(s, "\uFFFD"), 200) },
		"text":  func(s string) string { return strings.ToValidUTF8(s, "\uFFFD") },
		"esc":   url.PathEscape,
		"dict":  func(xs ...any) []any { return xs },
		"int64": func(n int) int64 { return int64(n) },
		"when":  fmtTime,
	}
	out := map[string]*template.Template{}
	names, _ := fs.Glob(assets, "templates/*.html")
	for _, n := range names {
		if n == "templates/layout.html" || n == "templates/jobs.html" {
			continue
		}
		t := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(assets, "templates/layout.html", "templates/jobs.html", n))
		out[strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")] = t
	}
	return out
}()

// view is what every page's layout reads.
type view struct {
	Title    string
	Prefix   string
	ReadOnly bool
	CSRF     string
	Sections []Section
	Poll     string // the JSON the page polls, "" for none
	PollMs   int64
	Queue    string
	Here     string // this page's path and query, for an action's way back
	Msg      string
	Data     any
}

// render writes page name with data into the layout, as text/html.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, name, title string, v view) {
	v.Title, v.Prefix, v.ReadOnly, v.Sections = title, h.opts.Prefix, h.opts.ReadOnly, h.opts.Sections
	v.PollMs = h.opts.PollEvery.Milliseconds()
	v.Msg = r.URL.Query().Get("msg")
	here := *r.URL
	q := here.Query()
	q.Del("msg")
	here.RawQuery = q.Encode()
	v.Here = h.opts.Prefix + here.RequestURI()
	if !h.opts.ReadOnly {
		v.CSRF = h.token(w, r)
	}
	var b bytes.Buffer
	if err := pages[name].Execute(&b, v); err != nil {
		http.Error(w, "rendering: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(b.Bytes())
}

// static serves the embedded script and style sheet.
func (h *Handler) static(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	b, err := assets.ReadFile("static/" + name)
	if err != nil || strings.Contains(name, "/") {
		http.Error(w, "no such file", http.StatusNotFound)
		return
	}
	switch {
	case strings.HasSuffix(name, ".js"):
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	case strings.HasSuffix(name, ".css"):
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	default:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	}
	w.Header().Set("Cache-Control", "max-age=300")
	w.Write(b)
}

// queueRow is one queue's line of the overview, and its JSON.
type queueRow struct {
	Name    string `json:"name"`
	Pending int64  `json:"pending"`
	Active  int64  `json:"active"`
	Delayed int64  `json:"delayed"`
	Dead    int64  `json:"dead"`
	Due     int64  `json:"due"`
	Expired int64  `json:"expired"`
	Paused  bool   `json:"paused"`
	LagMs   int64  `json:"lag_ms"`
	Lag     string `json:"lag"`
	Error   string `json:"error,omitempty"`
}

// overviewRows reads every known queue's counts (cached; one stats read
// per queue per TTL at most).
func (h *Handler) overviewRows(r *http.Request) ([]queueRow, error) {
	names, err := h.st.list(r.Context())
	if err != nil {
		return nil, err
	}
	out := make([]queueRow, 0, len(names))
	for _, n := range names {
		row, _ := h.queueRow(r, n)
		out = append(out, row)
	}
	return out, nil
}

func (h *Handler) queueRow(r *http.Request, name string) (queueRow, *queueEntry) {
	row := queueRow{Name: name}
	e, err := h.st.queue(r.Context(), name)
	if err != nil {
		row.Error = err.Error()
		return row, nil
	}
	st, err := e.stats(r.Context(), h.opts.StatsTTL)
	if err != nil {
		row.Error = err.Error()
		return row, e
	}
	row.Pending, row.Active, row.Delayed, row.Dead = st.Pending, st.Active, st.Delayed, st.Dead
	row.Due, row.Expired, row.Paused = st.Due, st.Expired, st.Paused
	row.LagMs, row.Lag = st.Lag.Milliseconds(), st.Lag.Round(time.Millisecond).String()
	return row, e
}

// maxCharts is the most charts the overview shows (a queue's page
// always has its own).
const maxCharts = 12

// overviewView is the overview page.
type overviewView struct {
	Rows, Charts []queueRow
}

func (h *Handler) overview(w http.ResponseWriter, r *http.Request) {
	rows, err := h.overviewRows(r)
	if err != nil {
		fail(w, err)
		return
	}
	ov := overviewView{Rows: rows, Charts: rows[:min(len(rows), maxCharts)]}
	h.render(w, r, "overview", "Queues", view{Poll: h.opts.Prefix + "/api/overview", Data: ov})
}

func (h *Handler) apiOverview(w http.ResponseWriter, r *http.Request) {
	rows, err := h.overviewRows(r)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, map[string]any{"queues": rows})
}

func (h *Handler) apiQueue(w http.ResponseWriter, r *http.Request) {
	_, name, err := h.entry(r)
	if err != nil {
		fail(w, err)
		return
	}
	row, _ := h.queueRow(r, name)
	writeJSON(w, map[string]any{"queues": []queueRow{row}})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// entry reads the {queue} of the path: 400 when invalid, 404 when not
// known.
func (h *Handler) entry(r *http.Request) (*queueEntry, string, error) {
	name := r.PathValue("queue")
	e, err := h.st.queue(r.Context(), name)
	if err != nil {
		return nil, name, fmt.Errorf("queue %q: %w", clip(name, 64), err)
	}
	return e, name, nil
}

// maxPage is the largest page a list shows.
const maxPage = 200

// pageSize reads n (default 50, 1 to maxPage).
func pageSize(r *http.Request) (int, error) {
	s := r.URL.Query().Get("n")
	if s == "" {
		return 50, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > maxPage {
		return 0, badf("n=%q: want a page size of 1 to %d", clip(s, 20), maxPage)
	}
	return n, nil
}

// listView is a queue page's list of one set.
type listView struct {
	Stats      queueRow
	State      string
	States     []string
	Jobs       []jobRow
	Next, Prev string // cursors; "" for none
	N          int
	Now        int64
}

var setStates = []string{"pending", "active", "delayed", "dead"}

func (h *Handler) queuePage(w http.ResponseWriter, r *http.Request) {
	e, name, err := h.entry(r)
	if err != nil {
		fail(w, err)
		return
	}
	qv := r.URL.Query()
	state := qv.Get("state")
	if state == "" {
		state = "pending"
	}
	key := e.setKey(emq.State(state))
	if key == "" {
		fail(w, badf("state=%q: want pending, active, delayed or dead", clip(state, 20)))
		return
	}
	n, err := pageSize(r)
	if err != nil {
		fail(w, err)
		return
	}
	after, hasAfter, err := parseCursor(qv.Get("after"))
	if err != nil {
		fail(w, &badInput{"after: " + err.Error()})
		return
	}
	before, hasBefore, err := parseCursor(qv.Get("before"))
	if err != nil {
		fail(w, &badInput{"before: " + err.Error()})
		return
	}
	if hasAfter && hasBefore {
		fail(w, badf("give after or before, not both"))
		return
	}
	cur, has, back := after, hasAfter, false
	if hasBefore {
		cur, has, back = before, true, true
	}
	ms, more, err := pageOf(r.Context(), h.opts.Sender, key, state == "pending", cur, has, back, -1, n)
	if err != nil {
		fail(w, err)
		return
	}
	if back {
		ms = reversed(ms)
	}
	jobs, err := rows(r.Context(), h.opts.Sender, e.keys, ms)
	if err == nil {
		err = withTypes(r.Context(), e, jobs)
	}
	if err != nil {
		fail(w, err)
		return
	}
	lv := listView{State: state, States: setStates, Jobs: jobs, N: n}
	lv.Stats, _ = h.queueRow(r, name)
	if len(ms) > 0 {
		first, last := cursor{ms[0].Score, ms[0].ID}, cursor{ms[len(ms)-1].Score, ms[len(ms)-1].ID}
		if !back && more || back {
			lv.Next = last.String()
		}
		if back && more || !back && has {
			lv.Prev = first.String()
		}
	} else if has {
		// An empty page past the end (or before the start): offer the
		// way back.
		if back {
			lv.Next = cur.String()
		} else {
			lv.Prev = cur.String()
		}
	}
	h.render(w, r, "queue", name, view{Queue: name, Poll: h.opts.Prefix + "/api/queues/" + url.PathEscape(name), Data: lv})
}

func reversed(ms []member) []member {
	out := make([]member, len(ms))
	for i, m := range ms {
		out[len(ms)-1-i] = m
	}
	return out
}

func (h *Handler) chart(w http.ResponseWriter, r *http.Request) {
	_, name, err := h.entry(r)
	if err != nil {
		fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Write(chartSVG(h.smp.samples(name), h.opts.SampleEvery))
}

// jobID reads the {id} of the path: 400 unless a branded id.
// jobEntry is the queue and the job id a job's route names, each checked.
func (h *Handler) jobEntry(r *http.Request) (*queueEntry, string, string, error) {
	e, name, err := h.entry(r)
	if err != nil {
		return nil, "", "", err
	}
	id, err := jobID(r)
	return e, name, id, err
}

func jobID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	if !emq.ValidID(id) {
		return "", badf("%q is not a job id (14 bytes: JOB and 11 base62 digits)", clip(id, 32))
	}
	return id, nil
}

// payloadShown is the most payload bytes the job page shows.
const payloadShown = 4096

// jobView is the job page.
type jobView struct {
	jobDetail
	Shown     string // the payload as shown: text, pretty JSON, or a hex dump
	Kind      string // "text", "json", "binary (hex)"
	Size      int
	Truncated bool
	Timeline  []event
	Extra     jobExtra
}

// event is one line of a job's timeline.
type event struct {
	What string
	At   string
}

func (h *Handler) jobPage(w http.ResponseWriter, r *http.Request) {
	e, name, id, err := h.jobEntry(r)
	if err != nil {
		fail(w, err)
		return
	}
	d, found, err := job(r.Context(), h.opts.Sender, e.keys, id)
	if err != nil {
		fail(w, err)
		return
	}
	if !found {
		fail(w, fmt.Errorf("job %s in queue %q: %w", id, clip(name, 64), errNoJob))
		return
	}
	v := jobView{jobDetail: d, Size: len(d.Payload)}
	v.Shown, v.Kind, v.Truncated = showPayload(d.Payload)
	v.Timeline = timeline(d)
	if v.Extra, err = h.extra(r.Context(), e, d); err != nil {
		fail(w, err)
		return
	}
	h.render(w, r, "job", id, view{Queue: name, Data: v})
}

// showPayload renders at most payloadShown bytes of p: indented JSON
// when p is small valid JSON, text when valid UTF-8, else a hex dump.
// The template escapes what it returns.
func showPayload(p []byte) (shown, kind string, truncated bool) {
	if len(p) <= payloadShown && json.Valid(p) {
		var b bytes.Buffer
		if json.Indent(&b, p, "", "  ") == nil && b.Len() <= 4*payloadShown {
			return b.String(), "json", false
		}
	}
	cut := p
	if len(cut) > payloadShown {
		cut, truncated = cut[:payloadShown], true
	}
	text := trimPartialRune(cut)
	if utf8.Valid(text) {
		return string(text), "text", truncated
	}
	if mostlyText(text) {
		return strings.ToValidUTF8(string(text), "\uFFFD"), "text, invalid UTF-8 shown as \uFFFD", truncated
	}
	if len(cut) > payloadShown/4 {
		cut, truncated = cut[:payloadShown/4], true
	}
	var b strings.Builder
	for i := 0; i < len(cut); i += 16 {
		line := cut[i:min(i+16, len(cut))]
		fmt.Fprintf(&b, "%08x  % x\n", i, line)
	}
	return b.String(), "binary (hex)", truncated
}

// mostlyText reports whether at least 90% of p's bytes are in valid
// runes other than control characters (but tab, CR, LF).
func mostlyText(p []byte) bool {
	good := 0
	for i := 0; i < len(p); {
		r, n := utf8.DecodeRune(p[i:])
		if r != utf8.RuneError && (r >= 0x20 || r == '\t' || r == '\n' || r == '\r') {
			good += n
		}
		i += n
	}
	return good*10 >= len(p)*9
}

// trimPartialRune drops an incomplete rune cut at the end of p.
func trimPartialRune(p []byte) []byte {
	for i := 0; i < utf8.UTFMax && len(p) > 0; i++ {
		if utf8.Valid(p) {
			return p
		}
		r, _ := utf8.DecodeLastRune(p)
		if r != utf8.RuneError {
			return p
		}
		p = p[:len(p)-1]
	}
	return p
}

// timeline lists what the id, the sets and the row tell of a job's life.
func timeline(d jobDetail) []event {
	var ev []event
	if _, sf, err := emq.ParseID(d.ID); err == nil {
		ev = append(ev, event{"enqueued (the id's mint time)", emq.SnowflakeTime(sf).Format(time.RFC3339Nano)})
	}
	if d.Attempts != "" && d.Attempts != "0" {
		ev = append(ev, event{"claimed " + d.Attempts + " time(s) (attempts)", ""})
	}
	if d.Error != "" {
		ev = append(ev, event{"failed: last error recorded", ""})
	}
	at := fmtMillis(d.Score)
	switch d.In {
	case emq.StatePending:
		ev = append(ev, event{"waiting in pending", ""})
	case emq.StateActive:
		ev = append(ev, event{"claimed; lease runs until", at})
	case emq.StateDelayed:
		ev = append(ev, event{"delayed; due at", at})
	case emq.StateDead:
		ev = append(ev, event{"died at", at})
	}
	if d.State == "completed" {
		e := event{What: "completed; row kept"}
		if d.PTTL > 0 && !d.Now.IsZero() {
			e.What = "completed; row expires at"
			e.At = d.Now.Add(time.Duration(d.PTTL) * time.Millisecond).UTC().Format(time.RFC3339)
		}
		ev = append(ev, e)
	}
	if d.In == "" && d.State != "completed" {
		ev = append(ev, event{"in no set (a row without its id in a set)", ""})
	}
	if !d.Exists {
		ev = append(ev, event{"ghost: the id is in a set but its row is gone", ""})
	}
	return ev
}

// payloadRaw serves a job's payload byte for byte, as a download.
func (h *Handler) payloadRaw(w http.ResponseWriter, r *http.Request) {
	e, name, id, err := h.jobEntry(r)
	if err != nil {
		fail(w, err)
		return
	}
	p, ok, err := payload(r.Context(), h.opts.Sender, e.keys, id)
	if err != nil {
		fail(w, err)
		return
	}
	if !ok {
		fail(w, fmt.Errorf("job %s in queue %q has no payload: %w", id, clip(name, 64), errNoJob))
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", `attachment; filename="`+id+`.bin"`)
	w.Header().Set("Content-Length", strconv.Itoa(len(p)))
	w.Write(p)
}

// deadView is the filtered dead list.
type deadView struct {
	Stats           queueRow
	Prefix          string
	Older, Newer    string
	Jobs            []jobRow
	Next            string
	Examined, Limit int
	Filtered        bool
}

// filterOf reads the dead filter's parameters: prefix, and older and
// newer as durations before the server's clock now.
func filterOf(q url.Values, now time.Time) (deadFilter, error) {
	f := deadFilter{Prefix: q.Get("prefix"), Since: -1, Before: -1}
	if len(f.Prefix) > 1024 {
		return f, badf("prefix: at most 1024 bytes")
	}
	for _, p := range []struct {
		name string
		dst  *int64
	}{{"older", &f.Before}, {"newer", &f.Since}} {
		s := q.Get(p.name)
		if s == "" {
			continue
		}
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return f, badf("%s=%q: want a duration such as 30m or 24h", p.name, clip(s, 32))
		}
		*p.dst = now.Add(-d).UnixMilli()
	}
	return f, nil
}

func (h *Handler) deadPage(w http.ResponseWriter, r *http.Request) {
	e, name, err := h.entry(r)
	if err != nil {
		fail(w, err)
		return
	}
	q := r.URL.Query()
	n, err := pageSize(r)
	if err != nil {
		fail(w, err)
		return
	}
	cur, has, err := parseCursor(q.Get("after"))
	if err != nil {
		fail(w, &badInput{"after: " + err.Error()})
		return
	}
	st, err := e.stats(r.Context(), h.opts.StatsTTL)
	if err != nil {
		fail(w, err)
		return
	}
	f, err := filterOf(q, st.Time)
	if err != nil {
		fail(w, err)
		return
	}
	jobs, next, more, examined, err := scanDead(r.Context(), h.opts.Sender, e.keys, f, cur, has, n)
	if err == nil {
		err = withTypes(r.Context(), e, jobs)
	}
	if err != nil {
		fail(w, err)
		return
	}
	dv := deadView{Prefix: f.Prefix, Older: q.Get("older"), Newer: q.Get("newer"), Jobs: jobs, Examined: examined, Limit: deadScan}
	dv.Filtered = f.Prefix != "" || f.Since >= 0 || f.Before >= 0
	if more {
		dv.Next = next.String()
	}
	dv.Stats, _ = h.queueRow(r, name)
	h.render(w, r, "dead", name+" · dead", view{Queue: name, Poll: h.opts.Prefix + "/api/queues/" + url.PathEscape(name), Data: dv})
}

func (h *Handler) section(s Section) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := s.Render(r.Context(), r)
		if err != nil {
			fail(w, err)
			return
		}
		h.render(w, r, "section", s.Title, view{Data: template.HTML(body)})
	}
}

// fmtMillis renders a score in Unix ms as a UTC time; 0 as "".
func fmtMillis(ms int64) string {
	if ms == 0 {
		return ""
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000")
}

// fmtTime renders a time in UTC; the zero time as "".
func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05.000")
}

// fmtBytes renders a size.
func fmtBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	case n >= 1<<10:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 1, 64) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " B"
}
