package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/jobs"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/resp"
)

// The job system's pages (package jobs, and emq's lanes and flows): each
// a page of one queue, every read bounded (a sample, a LIMIT, an HSCAN
// page of one hash, a verb's own bound), never a scan of the keyspace.

// headBytes is how much of each payload the lists read for its task
// type: the envelope's header ends within its first 4096 bytes.
const headBytes = 4096

// headMax is the largest payload whose head is read for a list; a larger
// one shows its type as unread (its job page reads it whole).
const headMax = 1 << 20

// typeSample is how many ids of each set the types page examines.
const typeSample = 200

// hscanCount is the COUNT hint of the HSCAN pages of the lanes and flows
// pages (one hash each).
const hscanCount = 50

// maxSchedules is the most schedules read in one page: above it the
// schedules page reads emq:{q}:cron by HSCAN pages.
const maxSchedules = 1000

// routeJobSystem registers the job system's pages, and their actions
// unless read-only.
func (h *Handler) routeJobSystem(m *http.ServeMux) {
	m.HandleFunc("GET /queues/{queue}/types", h.typesPage)
	m.HandleFunc("GET /queues/{queue}/schedules", h.schedulesPage)
	m.HandleFunc("GET /queues/{queue}/uniques", h.uniquesPage)
	m.HandleFunc("GET /queues/{queue}/workers", h.workersPage)
	m.HandleFunc("GET /queues/{queue}/limits", h.limitsPage)
	m.HandleFunc("GET /queues/{queue}/lanes", h.lanesPage)
	m.HandleFunc("GET /queues/{queue}/flows", h.flowsPage)
	m.HandleFunc("GET /queues/{queue}/flows/{id}", h.flowPage)
	if !h.opts.ReadOnly {
		m.Handle("POST /queues/{queue}/lanes/resume", h.action(h.doLaneResume))
		m.Handle("POST /queues/{queue}/flows/{id}/cancel", h.action(h.doFlowCancel))
		m.Handle("POST /queues/{queue}/delete-dead", h.action(h.doDeleteDead))
	}
}

// taskOf is what a payload's head tells of its task: its type ("" for a
// payload that is no envelope), whether the envelope is malformed, the
// unique key's echo.
type taskOf struct {
	Type      string
	Malformed bool
	Unread    bool // the payload was too large to read for a list
	Unique    string
}

func parseTask(head []byte, size int64) taskOf {
	if size > headMax && len(head) == 0 {
		return taskOf{Unread: true}
	}
	if !jobs.IsEnveloped(head) {
		return taskOf{}
	}
	e, err := jobs.ParseEnvelope(head)
	if err != nil {
		return taskOf{Malformed: true}
	}
	return taskOf{Type: e.Type, Unique: e.Unique}
}

// withTypes fills each row's task from its payload's head (one
// payload_heads call, a read).
func withTypes(ctx context.Context, e *queueEntry, rs []jobRow) error {
	if len(rs) == 0 {
		return nil
	}
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = r.ID
	}
	hs, err := e.q.PayloadHeads(ctx, ids, headBytes, headMax)
	if err != nil {
		return err
	}
	for i := range rs {
		rs[i].Task = parseTask(hs[i].Head, hs[i].Size)
	}
	return nil
}

// sampled is one job of the types sample.
type sampled struct {
	ID    string
	State string
	taskOf
}

// sample reads the first typeSample ids of each set (ZRANGE 0 n-1, one
// pipeline) and their payloads' heads.
func (h *Handler) sample(ctx context.Context, e *queueEntry) ([]sampled, error) {
	var b pipeline.Batch
	for _, s := range setStates {
		b.Add("ZRANGE", e.setKey(emq.State(s)), "0", strconv.Itoa(typeSample-1))
	}
	if err := b.Exec(ctx, h.opts.Sender); err != nil {
		return nil, err
	}
	var out []sampled
	var ids []string
	for i, s := range setStates {
		v := b.Reply(i)
		if err := v.Err(); err != nil {
			return nil, err
		}
		for _, m := range v.Elems {
			if id := string(m.Str); emq.ValidID(id) {
				out = append(out, sampled{ID: id, State: s})
				ids = append(ids, id)
			}
		}
	}
	hs, err := e.q.PayloadHeads(ctx, ids, headBytes, headMax)
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].taskOf = parseTask(hs[i].Head, hs[i].Size)
	}
	return out, nil
}

// typeCount is one line of the types page.
type typeCount struct {
	Type                            string
	Pending, Active, Delayed, Dead  int
	Total                           int
	Raw, Malformed, Unread, Example bool
	ExampleID                       string
}

type typesView struct {
	Types    []typeCount
	Examined int
	Sample   int
}

func (h *Handler) typesPage(w http.ResponseWriter, r *http.Request) {
	e, name, err := h.entry(r)
	if err != nil {
		fail(w, err)
		return
	}
	smp, err := h.sample(r.Context(), e)
	if err != nil {
		fail(w, err)
		return
	}
	by := map[string]*typeCount{}
	for _, s := range smp {
		key := "t:" + s.Type
		switch {
		case s.Unread:
			key = "unread"
		case s.Malformed:
			key = "malformed"
		case s.Type == "":
			key = "raw"
		}
		c := by[key]
		if c == nil {
			c = &typeCount{Type: s.Type, Raw: key == "raw", Malformed: key == "malformed", Unread: key == "unread", ExampleID: s.ID}
			by[key] = c
		}
		c.Total++
		switch s.State {
		case "pending":
			c.Pending++
		case "active":
			c.Active++
		case "delayed":
			c.Delayed++
		case "dead":
			c.Dead++
		}
	}
	tv := typesView{Examined: len(smp), Sample: typeSample}
	for _, c := range by {
		tv.Types = append(tv.Types, *c)
	}
	slices.SortFunc(tv.Types, func(a, b typeCount) int {
		if a.Total != b.Total {
			return b.Total - a.Total
		}
		return strings.Compare(a.Type, b.Type)
	})
	h.render(w, r, "types", name+" · task types", view{Queue: name, Data: tv})
}

// scheduleRow is one schedule: the server's last slot and the job it
// enqueued, the host's spec, zone and next slot when this process
// registered it.
type scheduleRow struct {
	Name       string
	Last       time.Time
	HasLast    bool
	JobID      string // the job enqueued for the last slot ("" unknown)
	Spec, TZ   string
	Next       time.Time
	Registered bool // known to one of Options.Schedulers
}

type schedulesView struct {
	Rows []scheduleRow
	Next string // the HSCAN cursor of the next page, "" none
}

func (h *Handler) schedulesPage(w http.ResponseWriter, r *http.Request) {
	e, name, err := h.entry(r)
	if err != nil {
		fail(w, err)
		return
	}
	ctx := r.Context()
	cronKey := e.keys.Base + emq.TypeCron
	var sv schedulesView
	var server []emq.CronSchedule
	n, err := h.opts.Sender.Do(ctx, "HLEN", cronKey)
	if err != nil {
		fail(w, err)
		return
	}
	if c := r.URL.Query().Get("cursor"); n.Int <= maxSchedules && c == "" {
		if server, err = e.q.CronSchedules(ctx); err != nil {
			fail(w, err)
			return
		}
	} else {
		// Too many for one page: HSCAN pages of the hash, by cursor.
		if c == "" {
			c = "0"
		}
		if _, err := strconv.ParseUint(c, 10, 64); err != nil {
			fail(w, badf("cursor=%q: want an HSCAN cursor", clip(c, 24)))
			return
		}
		var pairs []string
		if sv.Next, pairs, err = hscan(ctx, h, cronKey, c, maxSchedules); err != nil {
			fail(w, err)
			return
		}
		for i := 0; i+1 < len(pairs); i += 2 {
			ms, _ := strconv.ParseInt(pairs[i+1], 10, 64)
			server = append(server, emq.CronSchedule{Name: pairs[i], Last: time.UnixMilli(ms)})
		}
	}
	rows := map[string]*scheduleRow{}
	var order []string
	for _, s := range server {
		rows[s.Name] = &scheduleRow{Name: s.Name, Last: s.Last, HasLast: true}
		order = append(order, s.Name)
	}
	now := time.Now()
	for _, sc := range h.opts.Schedulers {
		for _, si := range sc.Schedules(now) {
			if si.Queue != name {
				continue
			}
			row := rows[si.Name]
			if row == nil {
				if sv.Next != "" || r.URL.Query().Get("cursor") != "" {
					continue // shown with its page of the hash, if any
				}
				row = &scheduleRow{Name: si.Name}
				rows[si.Name] = row
				order = append(order, si.Name)
			}
			row.Spec, row.TZ, row.Next, row.Registered = si.Spec, si.TZ, si.Next, true
		}
	}
	// The job of each last slot: cronjobs members "<id>\n<name>" at the
	// slot's score (ZRANGE BYSCORE … LIMIT, one pipeline).
	var b pipeline.Batch
	var asked []*scheduleRow
	for _, nm := range order {
		row := rows[nm]
		if !row.HasLast {
			continue
		}
		ms := strconv.FormatInt(row.Last.UnixMilli(), 10)
		b.Add("ZRANGE", e.keys.Base+emq.TypeCronJobs, ms, ms, "BYSCORE", "LIMIT", "0", "16")
		asked = append(asked, row)
	}
	if b.Len() > 0 {
		if err := b.Exec(ctx, h.opts.Sender); err != nil {
			fail(w, err)
			return
		}
		for i, row := range asked {
			for _, m := range b.Reply(i).Elems {
				if id, nm, ok := strings.Cut(string(m.Str), "\n"); ok && nm == row.Name {
					row.JobID = id
				}
			}
		}
	}
	for _, nm := range order {
		sv.Rows = append(sv.Rows, *rows[nm])
	}
	slices.SortFunc(sv.Rows, func(a, b scheduleRow) int { return strings.Compare(a.Name, b.Name) })
	h.render(w, r, "schedules", name+" · schedules", view{Queue: name, Data: sv})
}

// hscan reads one HSCAN page of key from cursor: the next cursor ("" at
// the end) and the field, value pairs.
func hscan(ctx context.Context, h *Handler, key, cursor string, count int) (string, []string, error) {
	v, err := h.opts.Sender.Do(ctx, "HSCAN", key, cursor, "COUNT", strconv.Itoa(count))
	if err != nil {
		return "", nil, err
	}
	if v.Type != resp.Array || len(v.Elems) != 2 {
		return "", nil, fmt.Errorf("HSCAN: unexpected reply %s", v.Type)
	}
	next := string(v.Elems[0].Str)
	if next == "0" {
		next = ""
	}
	pairs := make([]string, len(v.Elems[1].Elems))
	for i, x := range v.Elems[1].Elems {
		pairs[i] = string(x.Str)
	}
	return next, pairs, nil
}

// uniqueRow is a unique key and its owner.
type uniqueRow struct {
	Key   string
	Owner string
	State string
	Free  bool
}

type uniquesView struct {
	Key     string // the key looked up ("" none)
	Lookup  *uniqueRow
	Sampled []uniqueRow // the keys echoed (u) in the sampled jobs' envelopes
}

// maxUniques is the most echoed keys the uniques page looks up.
const maxUniques = 50

func (h *Handler) uniquesPage(w http.ResponseWriter, r *http.Request) {
	e, name, err := h.entry(r)
	if err != nil {
		fail(w, err)
		return
	}
	ctx := r.Context()
	owner := func(key string) (uniqueRow, error) {
		id, st, err := e.q.UniqueOwner(ctx, key)
		switch {
		case errors.Is(err, emq.ErrNoOwner):
			return uniqueRow{Key: key, Free: true}, nil
		case err != nil:
			return uniqueRow{}, err
		}
		return uniqueRow{Key: key, Owner: id, State: string(st)}, nil
	}
	uv := uniquesView{Key: r.URL.Query().Get("key")}
	if len(uv.Key) > 64<<10 {
		fail(w, badf("key: at most 64 KiB"))
		return
	}
	if uv.Key != "" {
		u, err := owner(uv.Key)
		if err != nil {
			fail(w, err)
			return
		}
		uv.Lookup = &u
	}
	smp, err := h.sample(ctx, e)
	if err != nil {
		fail(w, err)
		return
	}
	seen := map[string]bool{}
	for _, s := range smp {
		if s.Unique == "" || seen[s.Unique] || len(uv.Sampled) == maxUniques {
			continue
		}
		seen[s.Unique] = true
		u, err := owner(s.Unique)
		if err != nil {
			fail(w, err)
			return
		}
		uv.Sampled = append(uv.Sampled, u)
	}
	h.render(w, r, "uniques", name+" · unique keys", view{Queue: name, Data: uv})
}

// workerRow is one live consumer.
type workerRow struct {
	ID, Host, Queues, Go string
	PID, Concurrency     string
	Started, Heartbeat   time.Time
}

// maxWorkers is the most workers listed.
const maxWorkers = 1000

func (h *Handler) workersPage(w http.ResponseWriter, r *http.Request) {
	e, name, err := h.entry(r)
	if err != nil {
		fail(w, err)
		return
	}
	es, err := h.workers(r.Context(), e)
	if err != nil {
		fail(w, err)
		return
	}
	out := make([]workerRow, len(es))
	for i, x := range es {
		f := x.Fields
		out[i] = workerRow{ID: x.ID, Host: f["host"], Queues: f["queues"], Go: f["go"], PID: f["pid"], Concurrency: f["concurrency"]}
		if ms, err := strconv.ParseInt(f["started"], 10, 64); err == nil {
			out[i].Started = time.UnixMilli(ms)
		}
		if ms, err := strconv.ParseInt(f["heartbeat"], 10, 64); err == nil {
			out[i].Heartbeat = time.UnixMilli(ms)
		}
	}
	h.render(w, r, "workers", name+" · workers", view{Queue: name, Data: out})
}

// workers lists the live workers: emq's Workers verb (which prunes the
// entries whose hash expired: a write), or, read-only, the same with
// plain reads (ZRANGE … REV LIMIT and an HGETALL each, one pipeline),
// an entry whose hash expired left out and left in place.
func (h *Handler) workers(ctx context.Context, e *queueEntry) ([]emq.WorkerEntry, error) {
	if !h.opts.ReadOnly {
		return e.q.Workers(ctx, maxWorkers)
	}
	v, err := h.opts.Sender.Do(ctx, "ZRANGE", e.keys.WorkersKey(), "+inf", "-inf", "BYSCORE", "REV", "LIMIT", "0", strconv.Itoa(maxWorkers))
	if err != nil {
		return nil, err
	}
	var b pipeline.Batch
	for _, m := range v.Elems {
		b.Add("HGETALL", e.keys.Base+"worker:"+string(m.Str))
	}
	if b.Len() == 0 {
		return nil, nil
	}
	if err := b.Exec(ctx, h.opts.Sender); err != nil {
		return nil, err
	}
	var out []emq.WorkerEntry
	for i, m := range v.Elems {
		hv := b.Reply(i)
		if hv.Err() != nil || len(hv.Elems) == 0 {
			continue // gone
		}
		we := emq.WorkerEntry{ID: string(m.Str), Fields: map[string]string{}}
		for j := 0; j+1 < len(hv.Elems); j += 2 {
			we.Fields[string(hv.Elems[j].Str)] = string(hv.Elems[j+1].Str)
		}
		out = append(out, we)
	}
	return out, nil
}

type limitsView struct {
	emq.Limits
	Active  int64 // ids in active now
	Window  int64 // claims in the rate window's zset
	Limited bool
}

func (h *Handler) limitsPage(w http.ResponseWriter, r *http.Request) {
	e, name, err := h.entry(r)
	if err != nil {
		fail(w, err)
		return
	}
	l, err := e.q.Limits(r.Context())
	if err != nil {
		fail(w, err)
		return
	}
	var b pipeline.Batch
	b.Add("ZCARD", e.keys.Active)
	b.Add("ZCARD", e.keys.Base+emq.TypeRate)
	if err := b.Exec(r.Context(), h.opts.Sender); err != nil {
		fail(w, err)
		return
	}
	lv := limitsView{Limits: l, Active: b.Reply(0).Int, Window: b.Reply(1).Int, Limited: l.Active > 0 || l.Rate > 0}
	h.render(w, r, "limits", name+" · limits", view{Queue: name, Data: lv})
}

// laneRow is one lane with work or halted.
type laneRow struct {
	Name  string
	State string // in the ring, full, halted
	emq.LaneInfo
}

type lanesView struct {
	Lanes []laneRow
	Next  string
}

// laneState names a lane's state from what emq's Lane read.
func laneState(li emq.LaneInfo) string {
	switch {
	case li.Halted:
		return "halted"
	case li.Running > 0:
		return "running"
	case li.Waiting > 0:
		return "ready"
	}
	return "idle"
}

func (h *Handler) lanesPage(w http.ResponseWriter, r *http.Request) {
	e, name, err := h.entry(r)
	if err != nil {
		fail(w, err)
		return
	}
	ctx := r.Context()
	c, err := scanCursor(r)
	if err != nil {
		fail(w, err)
		return
	}
	next, pairs, err := hscan(ctx, h, e.keys.Base+"lanestate", c, hscanCount)
	if err != nil {
		fail(w, err)
		return
	}
	// Hashed keys (# + sha256) name their lane in lanename.
	var hashed []any
	for i := 0; i+1 < len(pairs); i += 2 {
		if strings.HasPrefix(pairs[i], "#") {
			hashed = append(hashed, pairs[i])
		}
	}
	names := map[string]string{}
	if len(hashed) > 0 {
		v, err := h.opts.Sender.Do(ctx, append([]any{"HMGET", e.keys.Base + "lanename"}, hashed...)...)
		if err != nil {
			fail(w, err)
			return
		}
		for i, x := range v.Elems {
			if !x.IsNull() {
				names[hashed[i].(string)] = string(x.Str)
			}
		}
	}
	lv := lanesView{Next: next}
	for i := 0; i+1 < len(pairs); i += 2 {
		k := pairs[i]
		ln := k
		if strings.HasPrefix(k, "#") {
			if ln = names[k]; ln == "" {
				continue // its name is gone: nothing to show or resume
			}
		}
		li, err := e.q.Lane(ctx, ln)
		if err != nil {
			fail(w, err)
			return
		}
		lv.Lanes = append(lv.Lanes, laneRow{Name: ln, State: laneState(li), LaneInfo: li})
	}
	slices.SortFunc(lv.Lanes, func(a, b laneRow) int { return strings.Compare(a.Name, b.Name) })
	h.render(w, r, "lanes", name+" · lanes", view{Queue: name, Data: lv})
}

// scanCursor reads an HSCAN cursor parameter ("0" when none).
func scanCursor(r *http.Request) (string, error) {
	c := r.URL.Query().Get("cursor")
	if c == "" {
		return "0", nil
	}
	if _, err := strconv.ParseUint(c, 10, 64); err != nil {
		return "", badf("cursor=%q: want an HSCAN cursor", clip(c, 24))
	}
	return c, nil
}

func (h *Handler) doLaneResume(w http.ResponseWriter, r *http.Request) {
	e, name, err := h.entry(r)
	if err != nil {
		fail(w, err)
		return
	}
	lane := r.PostForm.Get("lane")
	if _, err := emq.LaneKey(lane); err != nil {
		fail(w, &badInput{err.Error()})
		return
	}
	was, err := e.q.LaneResume(r.Context(), lane)
	if err != nil {
		fail(w, err)
		return
	}
	msg := "lane " + clip(lane, 64) + " resumed"
	if !was {
		msg = "lane " + clip(lane, 64) + " was not halted"
	}
	h.done(w, r, e, name, msg)
}

type flowsView struct {
	Flows []string // flows with jobs not yet resolved, from this page of emq:{q}:flowjob
	Next  string
}

func (h *Handler) flowsPage(w http.ResponseWriter, r *http.Request) {
	e, name, err := h.entry(r)
	if err != nil {
		fail(w, err)
		return
	}
	if id := r.URL.Query().Get("id"); id != "" {
		if !emq.ValidID(id) {
			fail(w, badf("%q is not a flow id", clip(id, 32)))
			return
		}
		http.Redirect(w, r, h.opts.Prefix+"/queues/"+url.PathEscape(name)+"/flows/"+id, http.StatusSeeOther)
		return
	}
	c, err := scanCursor(r)
	if err != nil {
		fail(w, err)
		return
	}
	next, pairs, err := hscan(r.Context(), h, e.keys.Base+"flowjob", c, hscanCount)
	if err != nil {
		fail(w, err)
		return
	}
	fv := flowsView{Next: next}
	seen := map[string]bool{}
	for i := 1; i < len(pairs); i += 2 {
		// the value is the flow's id, then its dependents after a space
		// (emq/LANES-FLOWS.md)
		if f, _, _ := strings.Cut(pairs[i], " "); !seen[f] && emq.ValidID(f) {
			seen[f] = true
			fv.Flows = append(fv.Flows, f)
		}
	}
	slices.Sort(fv.Flows)
	h.render(w, r, "flows", name+" · flows", view{Queue: name, Data: fv})
}

// maxFlowJobs is the most jobs a flow page lists (a flow has at most
// 1,000).
const maxFlowJobs = 1000

func (h *Handler) flowPage(w http.ResponseWriter, r *http.Request) {
	e, name, id, err := h.jobEntry(r)
	if err != nil {
		fail(w, err)
		return
	}
	fi, err := h.flow(r.Context(), e, id)
	if errors.Is(err, emq.ErrNoFlow) {
		err = fmt.Errorf("flow %s: %w", id, errNoJob)
	}
	if err != nil {
		fail(w, err)
		return
	}
	h.render(w, r, "flow", "flow "+id, view{Queue: name, Data: fi})
}

// flow reads a flow: emq's Flow (repair and read, one atomic call), or,
// read-only, plain reads of its hash, its job list and their states.
func (h *Handler) flow(ctx context.Context, e *queueEntry, id string) (emq.FlowInfo, error) {
	if !h.opts.ReadOnly {
		return e.q.Flow(ctx, id)
	}
	var b pipeline.Batch
	b.Add("HMGET", e.keys.Base+"flow:"+id, "state", "total", "left", "failed", "cancelled")
	b.Add("LRANGE", e.keys.Base+"flowjobs:"+id, "0", strconv.Itoa(maxFlowJobs-1))
	if err := b.Exec(ctx, h.opts.Sender); err != nil {
		return emq.FlowInfo{}, err
	}
	hv, lv := b.Reply(0), b.Reply(1)
	if err := errors.Join(hv.Err(), lv.Err()); err != nil {
		return emq.FlowInfo{}, err
	}
	if len(hv.Elems) != 5 || hv.Elems[0].IsNull() {
		return emq.FlowInfo{}, emq.ErrNoFlow
	}
	n := func(i int) int { x, _ := strconv.Atoi(string(hv.Elems[i].Str)); return x }
	fi := emq.FlowInfo{ID: id, State: emq.FlowState(hv.Elems[0].Str), Total: n(1), Left: n(2), Failed: n(3), Cancelled: n(4)}
	var sb pipeline.Batch
	for _, j := range lv.Elems {
		sb.Add("HGET", e.keys.Job(string(j.Str)), "state")
	}
	if sb.Len() > 0 {
		if err := sb.Exec(ctx, h.opts.Sender); err != nil {
			return emq.FlowInfo{}, err
		}
	}
	for i, j := range lv.Elems {
		fi.Jobs = append(fi.Jobs, emq.FlowJob{ID: string(j.Str), State: emq.State(sb.Reply(i).Str)})
	}
	return fi, nil
}

func (h *Handler) doFlowCancel(w http.ResponseWriter, r *http.Request) {
	e, name, id, err := h.jobEntry(r)
	if err != nil {
		fail(w, err)
		return
	}
	fi, err := e.q.CancelFlow(r.Context(), id)
	if errors.Is(err, emq.ErrNoFlow) {
		err = fmt.Errorf("flow %s: %w", id, errNoJob)
	}
	if err != nil {
		fail(w, err)
		return
	}
	h.done(w, r, e, name, fmt.Sprintf("flow %s cancelled: %d jobs ended dead", id, fi.Cancelled))
}

// jobExtra is what the job page adds for the job system: the task the
// envelope names, the lane and the flow the job is in.
type jobExtra struct {
	Envelope  *jobs.Envelope
	Malformed string
	Lane      string // the lane's key form ("" none)
	LaneName  string
	Flow      string
}

// extra reads the job's lane and flow (its row's field lane, HGET flowjob; the lane's
// name when hashed) and parses its envelope.
func (h *Handler) extra(ctx context.Context, e *queueEntry, d jobDetail) (jobExtra, error) {
	var x jobExtra
	if jobs.IsEnveloped(d.Payload) {
		if env, err := jobs.ParseEnvelope(d.Payload); err != nil {
			x.Malformed = err.Error()
		} else {
			env.Body = nil
			x.Envelope = &env
		}
	}
	var b pipeline.Batch
	b.Add("HGET", e.keys.Job(d.ID), "lane")
	b.Add("HGET", e.keys.Base+"flowjob", d.ID)
	if err := b.Exec(ctx, h.opts.Sender); err != nil {
		return x, err
	}
	x.Lane, x.Flow = string(b.Reply(0).Str), string(b.Reply(1).Str)
	x.Flow, _, _ = strings.Cut(x.Flow, " ") // the flow's id, then its dependents
	x.LaneName = x.Lane
	if strings.HasPrefix(x.Lane, "#") {
		v, err := h.opts.Sender.Do(ctx, "HGET", e.keys.Base+"lanename", x.Lane)
		if err != nil {
			return x, err
		}
		x.LaneName = string(v.Str)
	}
	return x, nil
}

// doDeleteDead deletes the dead jobs a filter selects (prefix, older,
// newer), with emq.DeleteDead: 1,000 dead ids examined per atomic call,
// each deleted only if still dead, for at most bulkTime.
func (h *Handler) doDeleteDead(w http.ResponseWriter, r *http.Request) {
	h.deadByFilter(w, r, "deleted", (*emq.Queue).DeleteDead)
}
