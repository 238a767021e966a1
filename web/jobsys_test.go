package web

import (
	"html"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/jobs"
)

// hostile is user data the job system carries (a task type, a unique
// key, a schedule name, a worker's host, a lane name): each must render
// inert. The type and the unique key are token bytes (no & = %).
const (
	hostileType = `<script>alert("t")</script>`
	hostileKey  = `<img/src/onerror/alert(1)>`
	hostileName = `<script>alert('s')</script>&"`
	hostileHost = `<b onmouseover=alert(1)>h</b>`
	hostileLane = `<i>lane</i>"'&`
)

// jobSystem seeds queue q with the job system's data: typed tasks (one
// with a unique key), a schedule's fired slot, a live worker and a gone
// one, limits; queue lq with a halted lane and a running flow. It
// returns the ids the tests look for.
type seeded struct {
	typed, owner, cronJob, haltedBy, laneNext, flow string
	flowJobs                                        []string
	sched                                           *jobs.Scheduler
}

func seedJobSystem(t *testing.T, f *fixture, lq *emq.Queue) seeded {
	t.Helper()
	ctx := tctx(t)
	var s seeded
	jc := jobs.NewClient(f.cl, jobs.ClientConfig{})
	for i := range 3 {
		info, err := jc.Enqueue(ctx, jobs.NewTask(hostileType, []byte(strconv.Itoa(i))), jobs.Queue("q"))
		if err != nil {
			t.Fatal(err)
		}
		s.typed = info.ID
	}
	info, err := jc.Enqueue(ctx, jobs.NewTask("mail:send", []byte("x")), jobs.Queue("q"), jobs.Unique(hostileKey))
	if err != nil {
		t.Fatal(err)
	}
	s.owner = info.ID
	f.enqueue("a raw payload")

	s.sched = jobs.NewScheduler(jobs.SchedulerOptions{})
	if err := s.sched.Register(jobs.Schedule{Name: hostileName, Spec: "@every 1h", Queue: f.q, Payload: []byte("tick")}); err != nil {
		t.Fatal(err)
	}
	slot := time.Now().Truncate(time.Hour)
	res, err := f.q.CronFire(ctx, hostileName, []byte("tick"), time.Minute, []time.Time{slot})
	if err != nil {
		t.Fatal(err)
	}
	s.cronJob = res.IDs[0]

	if _, err := f.q.Heartbeat(ctx, "w-live", time.Minute, "host", hostileHost, "pid", "4242", "queues", "q=1", "concurrency", "7", "started", "1700000000000"); err != nil {
		t.Fatal(err)
	}
	// A worker gone: its entry is in the zset, its hash expired.
	if _, err := f.cl.Do(ctx, "ZADD", f.q.Keys().WorkersKey(), strconv.FormatInt(time.Now().UnixMilli(), 10), "w-gone"); err != nil {
		t.Fatal(err)
	}
	if err := f.q.SetLimits(ctx, emq.Limits{Active: 3, Rate: 10, Per: time.Second}); err != nil {
		t.Fatal(err)
	}

	ids, err := lq.LaneEnqueue(ctx, hostileLane, emq.LaneOptions{Halt: emq.LaneHaltOnDead}, []byte("l1"), []byte("l2"))
	if err != nil {
		t.Fatal(err)
	}
	js, err := lq.LaneClaim(ctx, time.Minute, 1)
	if err != nil || len(js) != 1 || js[0].ID != ids[0] {
		t.Fatalf("lane claim: %v %v", js, err)
	}
	if out, err := lq.FlowRetry(ctx, js[0].ID, js[0].Token, 0, 1, "fatal"); err != nil || out != emq.RetryDead {
		t.Fatalf("lane job to dead: %v %v", out, err)
	}
	s.haltedBy, s.laneNext = ids[0], ids[1]
	s.flow, s.flowJobs, err = lq.SubmitFlow(ctx, []emq.FlowNode{{Payload: []byte("a")}, {Payload: []byte("b"), Deps: []emq.FlowDep{{Node: 0}}}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestJobSystemPages: the types, schedules, uniques, workers, limits,
// lanes and flows pages show the seeded data, every hostile string
// escaped; the job list and the job page show the task type; a gone
// worker is hidden.
func TestJobSystemPages(t *testing.T) {
	for _, ro := range []bool{false, true} {
		t.Run("readonly="+strconv.FormatBool(ro), func(t *testing.T) {
			f := newFixture(t, Options{ReadOnly: ro}, "q", "lq")
			lq, err := emq.Open(tctx(t), f.cl, "lq")
			if err != nil {
				t.Fatal(err)
			}
			s := seedJobSystem(t, f, lq)
			f.h.opts.Schedulers = []*jobs.Scheduler{s.sched}
			esc := html.EscapeString
			for _, c := range []struct {
				path string
				want []string
			}{
				{"/queues/q/types", []string{esc(hostileType), ">3<", "mail:send", "raw (no envelope)"}},
				{"/queues/q", []string{esc(hostileType), "mail:send"}},
				{"/queues/q/jobs/" + s.typed, []string{`id="task-type">` + esc(hostileType)}},
				{"/queues/q/jobs/" + s.owner, []string{`id="task-unique"`, esc(hostileKey)}},
				{"/queues/q/schedules", []string{esc(hostileName), "@every 1h", "UTC", s.cronJob}},
				{"/queues/q/uniques", []string{esc(hostileKey), s.owner, "pending"}},
				{"/queues/q/uniques?key=" + url.QueryEscape(hostileKey), []string{`id="lookup-result"`, "held by", s.owner}},
				{"/queues/q/uniques?key=nobody", []string{`id="lookup-result"`, "free"}},
				{"/queues/q/workers", []string{esc(hostileHost), "4242", "w-live", "7"}},
				{"/queues/q/limits", []string{`id="limit-active">3<`, "10 claims per 1s"}},
				{"/queues/lq/lanes", []string{esc(hostileLane), "halted", s.haltedBy}},
				{"/queues/lq/flows", []string{s.flow}},
				{"/queues/lq/flows/" + s.flow, []string{`id="flow-state">running<`, s.flowJobs[0], s.flowJobs[1]}},
				{"/queues/lq/jobs/" + s.flowJobs[1], []string{`id="task-flow"`, s.flow}},
				// a job with dependents: its flowjob value is the flow id,
				// a space, the dependents (emq/LANES-FLOWS.md)
				{"/queues/lq/jobs/" + s.flowJobs[0], []string{`id="task-flow"`, `">` + s.flow + `</a>`}},
				{"/queues/lq/jobs/" + s.laneNext, []string{`id="task-lane"`, esc(hostileLane)}},
			} {
				code, body, _ := f.get(c.path)
				if code != 200 {
					t.Fatalf("%s: %d %s", c.path, code, clip(body, 300))
				}
				for _, w := range c.want {
					if !strings.Contains(body, w) {
						t.Errorf("%s: no %q in %s", c.path, w, clip(body, 4000))
					}
				}
				for _, raw := range []string{hostileType, hostileKey, hostileName, hostileHost, hostileLane, "<script>", "<img/src", "<b on", "<i>"} {
					if strings.Contains(body, raw) {
						t.Errorf("%s: %q rendered unescaped", c.path, raw)
					}
				}
				if strings.Contains(body, "w-gone") {
					t.Errorf("%s: the gone worker is shown", c.path)
				}
				if ro && strings.Contains(body, `method="post"`) {
					t.Errorf("%s: a form in read-only", c.path)
				}
			}
		})
	}
}

// TestJobSystemActions: resume a halted lane, cancel a flow and delete
// dead jobs by a filter, each CSRF-protected (403 and nothing changed
// without the token or from another origin) and absent in read-only
// mode (404/405, nothing changed).
func TestJobSystemActions(t *testing.T) {
	f := newFixture(t, Options{}, "q", "lq")
	lq, err := emq.Open(tctx(t), f.cl, "lq")
	if err != nil {
		t.Fatal(err)
	}
	s := seedJobSystem(t, f, lq)
	for range 3 {
		f.enqueue("d")
	}
	f.kill("boom: 1")
	f.kill("boom: 2")
	keep := f.kill("other")
	ro := newReadOnlyView(t, f)

	halted := func() bool {
		li, err := lq.Lane(tctx(t), hostileLane)
		if err != nil {
			t.Fatal(err)
		}
		return li.Halted
	}
	flowState := func() emq.FlowState {
		fi, err := lq.Flow(tctx(t), s.flow)
		if err != nil {
			t.Fatal(err)
		}
		return fi.State
	}
	dead := func() int64 {
		n, err := f.q.Count(tctx(t), emq.StateDead)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	acts := []struct {
		path    string
		form    url.Values
		changed func() bool
	}{
		{"/queues/lq/lanes/resume", url.Values{"lane": {hostileLane}, "back": {"/queues/lq/lanes"}}, func() bool { return !halted() }},
		{"/queues/lq/flows/" + s.flow + "/cancel", url.Values{"back": {"/queues/lq/flows/" + s.flow}}, func() bool { return flowState() != emq.FlowRunning }},
		{"/queues/q/delete-dead", url.Values{"prefix": {"boom"}, "back": {"/queues/q/dead?prefix=boom"}}, func() bool { return dead() != 3 }},
	}
	for _, a := range acts {
		for _, hdr := range []map[string]string{nil, {"Origin": "http://evil.example"}} {
			form := url.Values{}
			for k, v := range a.form {
				form[k] = v
			}
			if hdr != nil {
				form.Set("csrf", f.token("/queues/q"))
			}
			if code, body := f.post(a.path, form, hdr); code != 403 || a.changed() {
				t.Fatalf("%s without CSRF (%v): %d %s", a.path, hdr, code, body)
			}
		}
		if code, _ := ro.post(a.path, a.form, nil); (code != 404 && code != 405) || a.changed() {
			t.Fatalf("%s read-only: %d", a.path, code)
		}
	}
	tok := f.token("/queues/q")
	for _, a := range acts {
		form := url.Values{"csrf": {tok}}
		for k, v := range a.form {
			form[k] = v
		}
		code, _ := f.post(a.path, form, nil)
		if code != 303 || !a.changed() {
			t.Fatalf("%s: %d changed %v", a.path, code, a.changed())
		}
	}
	if fs := flowState(); fs != emq.FlowFailed {
		t.Errorf("cancelled flow: %s", fs)
	}
	if n := dead(); n != 1 {
		t.Errorf("dead after delete by filter: %d", n)
	}
	if r, _, err := f.q.Row(tctx(t), keep); err != nil || r.State != "dead" {
		t.Errorf("the unmatched dead job: %+v %v", r, err)
	}
	// The message and the way back: the filtered dead page.
	form := url.Values{"csrf": {tok}, "prefix": {"nothing"}, "back": {"/queues/q/dead?prefix=nothing"}}
	res, err := f.hc.PostForm(f.ts.URL+"/queues/q/delete-dead", form)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 303 {
		t.Fatalf("delete-dead: %d", res.StatusCode)
	}
	loc := res.Header.Get("Location")
	if !regexp.MustCompile(`^/queues/q/dead\?.*msg=deleted\+0\+dead\+jobs`).MatchString(loc) || !strings.Contains(loc, "prefix=nothing") {
		t.Errorf("redirect %q", loc)
	}
}

// newReadOnlyView is a read-only dashboard over f's server and queues.
func newReadOnlyView(t *testing.T, f *fixture) *fixture {
	t.Helper()
	h, err := New(tctx(t), Options{Sender: f.cl, Queues: []string{"q", "lq"}, ReadOnly: true, StatsTTL: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return &fixture{t: t, cl: f.cl, h: h, ts: ts, hc: ts.Client(), q: f.q}
}

// TestJobSystemReadsBounded: the job system's pages run no KEYS or SCAN
// of the keyspace (INFO commandstats, inner script calls included); every
// command they send (SLOWLOG at threshold 0 records each) is bounded: a
// ZRANGE by LIMIT or an index range of at most a sample, an LRANGE of at
// most a flow, an HSCAN of one of the queue's hashes with a COUNT, an
// HGETALL only of a worker's hash.
func TestJobSystemReadsBounded(t *testing.T) {
	for _, ro := range []bool{false, true} {
		t.Run("readonly="+strconv.FormatBool(ro), func(t *testing.T) {
			f := newFixture(t, Options{ReadOnly: ro}, "q", "lq")
			lq, err := emq.Open(tctx(t), f.cl, "lq")
			if err != nil {
				t.Fatal(err)
			}
			s := seedJobSystem(t, f, lq)
			f.h.opts.Schedulers = []*jobs.Scheduler{s.sched}
			ctx := tctx(t)
			for _, c := range [][]any{{"CONFIG", "SET", "slowlog-log-slower-than", "0"}, {"CONFIG", "SET", "slowlog-max-len", "10000"}, {"SLOWLOG", "RESET"}} {
				if _, err := f.cl.Do(ctx, c...); err != nil {
					t.Fatal(err)
				}
			}
			t.Cleanup(func() { f.cl.Do(ctx, "CONFIG", "SET", "slowlog-log-slower-than", "10000") })
			srv.ResetStats(t)
			for _, p := range []string{"/queues/q/types", "/queues/q/schedules", "/queues/q/uniques", "/queues/q/uniques?key=k",
				"/queues/q/workers", "/queues/q/limits", "/queues/lq/lanes", "/queues/lq/flows", "/queues/lq/flows/" + s.flow,
				"/queues/q", "/queues/q/dead", "/queues/lq/jobs/" + s.laneNext} {
				if code, body, _ := f.get(p); code != 200 {
					t.Fatalf("%s: %d %s", p, code, clip(body, 200))
				}
			}
			for _, c := range []string{"keys", "scan", "sscan", "zscan", "smembers", "hkeys", "hvals"} {
				if n := srv.CommandCalls(t, c); n != 0 {
					t.Errorf("%s ran %d times", c, n)
				}
			}
			v, err := f.cl.Do(ctx, "SLOWLOG", "GET", "10000")
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]int{}
			for _, e := range v.Elems {
				if len(e.Elems) < 4 {
					continue
				}
				var a []string
				for _, x := range e.Elems[3].Elems {
					a = append(a, string(x.Str))
				}
				cmd := strings.ToUpper(a[0])
				seen[cmd]++
				switch cmd {
				case "ZRANGE":
					if i := indexOf(a, "LIMIT"); i >= 0 {
						if n, _ := strconv.Atoi(a[i+2]); n > maxWorkers {
							t.Errorf("ZRANGE page %v", a)
						}
					} else if start, err1 := strconv.Atoi(a[2]); err1 != nil {
						t.Errorf("ZRANGE %v", a)
					} else if stop, err2 := strconv.Atoi(a[3]); err2 != nil || stop < 0 || stop-start > max(typeSample, maxPage+1) {
						t.Errorf("unbounded ZRANGE %v", a)
					}
				case "LRANGE":
					// Ours, or flow_complete's own of a flow's list (at most
					// emq.MaxFlowNodes).
					if !strings.Contains(a[1], "}:flowjobs:") || (a[3] != strconv.Itoa(maxFlowJobs-1) && a[3] != "-1") {
						t.Errorf("LRANGE %v", a)
					}
				case "HSCAN":
					if i := indexOf(a, "COUNT"); i < 0 || !strings.HasPrefix(a[1], "emq:{") {
						t.Errorf("HSCAN %v", a)
					}
				case "HGETALL":
					if !strings.Contains(a[1], "}:worker:") && !strings.Contains(a[1], "}:job:") && !strings.HasSuffix(a[1], "}:cron") {
						t.Errorf("HGETALL %v", a)
					}
				case "KEYS", "SCAN", "SMEMBERS", "HKEYS", "HVALS":
					t.Errorf("%v", a)
				}
			}
			if seen["HSCAN"] < 2 || seen["ZRANGE"] < 4 {
				t.Errorf("recorded too little: %v", seen)
			}
		})
	}
}

// TestSchedulesPaged: above maxSchedules the schedules page reads
// emq:{q}:cron by HSCAN pages with a cursor (never one HGETALL of it),
// and walking the pages shows every schedule.
func TestSchedulesPaged(t *testing.T) {
	f := newFixture(t, Options{}, "q")
	args := []any{"HSET", f.q.Keys().Base + emq.TypeCron}
	for i := range maxSchedules + 200 {
		args = append(args, "s"+strconv.Itoa(i), "1700000000000")
	}
	if _, err := f.cl.Do(tctx(t), args...); err != nil {
		t.Fatal(err)
	}
	srv.ResetStats(t)
	seen := map[string]bool{}
	next := regexp.MustCompile(`id="next" href="[^"]*cursor=(\d+)"`)
	name := regexp.MustCompile(`<tr data-name="(s\d+)">`)
	path := "/queues/q/schedules"
	for range 100 {
		code, body, _ := f.get(path)
		if code != 200 {
			t.Fatalf("%s: %d %s", path, code, clip(body, 200))
		}
		for _, m := range name.FindAllStringSubmatch(body, -1) {
			seen[m[1]] = true
		}
		m := next.FindStringSubmatch(body)
		if m == nil {
			break
		}
		path = "/queues/q/schedules?cursor=" + m[1]
	}
	if len(seen) != maxSchedules+200 {
		t.Errorf("walked %d schedules, want %d", len(seen), maxSchedules+200)
	}
	if n := srv.CommandCalls(t, "hgetall"); n != 0 {
		t.Errorf("HGETALL ran %d times", n)
	}
	if code, _, _ := f.get("/queues/q/schedules?cursor=x"); code != 400 {
		t.Errorf("bad cursor: %d", code)
	}
}
