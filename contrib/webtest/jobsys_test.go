package webtest

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/jobs"
	"github.com/echomq/echomq-go/web"
)

// Hostile user data of the job system: a task type and a unique key (token
// bytes: no space, &, =, %), a schedule name, a worker's host and a lane
// name (any bytes but the lane's braces). Rendered as markup, each would
// open a dialog (failing the test) or set window.__pwned.
const (
	evilType  = `<script>alert(1)</script>`
	evilKey   = `<script>alert(2)</script>`
	evilSched = `<script>window.__pwned=3;alert(3)</script>`
	evilHost  = `<img src=x onerror="window.__pwned=4;alert(4)">`
	evilLane  = `<img src=y onerror="window.__pwned=5;alert(5)">`
)

// jobDash is a dashboard over queues q and lq seeded with the job
// system's data.
type jobDash struct {
	*dash
	lq                  *emq.Queue
	typed, owner, flow  string
	haltedBy            string
	deadBoom, deadOther []string
}

func newJobDash(t *testing.T) *jobDash {
	t.Helper()
	ctx := context.Background()
	sched := jobs.NewScheduler(jobs.SchedulerOptions{})
	d := newDash(t, web.Options{Schedulers: []*jobs.Scheduler{sched}}, "q", "lq")
	jd := &jobDash{dash: d}
	var err error
	if jd.lq, err = emq.Open(ctx, d.q.Sender(), "lq"); err != nil {
		t.Fatal(err)
	}
	jc := jobs.NewClient(d.q.Sender(), jobs.ClientConfig{})
	info, err := jc.Enqueue(ctx, jobs.NewTask(evilType, []byte("{}")), jobs.Queue("q"))
	if err != nil {
		t.Fatal(err)
	}
	jd.typed = info.ID
	if info, err = jc.Enqueue(ctx, jobs.NewTask("mail:send", nil), jobs.Queue("q"), jobs.Unique(evilKey)); err != nil {
		t.Fatal(err)
	}
	jd.owner = info.ID
	if err := sched.Register(jobs.Schedule{Name: evilSched, Spec: "@every 1h", Queue: d.q, Payload: []byte("tick")}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.q.CronFire(ctx, evilSched, []byte("tick"), time.Minute, []time.Time{time.Now().Truncate(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.q.Heartbeat(ctx, "w1", time.Minute, "host", evilHost, "pid", "77", "queues", "q=1", "concurrency", "3"); err != nil {
		t.Fatal(err)
	}
	ids, err := jd.lq.LaneEnqueue(ctx, evilLane, emq.LaneOptions{Halt: emq.LaneHaltOnDead}, []byte("1"), []byte("2"))
	if err != nil {
		t.Fatal(err)
	}
	js, err := jd.lq.LaneClaim(ctx, time.Minute, 1)
	if err != nil || len(js) != 1 {
		t.Fatalf("lane claim %v %v", js, err)
	}
	if _, err := jd.lq.FlowRetry(ctx, js[0].ID, js[0].Token, 0, 1, "fatal"); err != nil {
		t.Fatal(err)
	}
	jd.haltedBy = ids[0]
	if jd.flow, _, err = jd.lq.SubmitFlow(ctx, []emq.FlowNode{{Payload: []byte("a")}, {Payload: []byte("b"), Deps: []emq.FlowDep{{Node: 0}}}}); err != nil {
		t.Fatal(err)
	}
	return jd
}

// inert checks the open page: no script of the data ran (window.__pwned),
// no element came from it (the only script is app.js, the only images
// the charts), and the text shows each string given, as text.
func inert(t *testing.T, ctx context.Context, page string, texts ...string) {
	t.Helper()
	pwned := get(t, ctx, chromedp.Evaluate[bool](`window.__pwned !== undefined`))
	injected := get(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("script:not([src$='app.js']), img:not([data-chart]), svg, iframe, [onerror], [onload]").length`))
	if pwned || injected != 0 {
		t.Errorf("%s: data ran or injected: pwned %v, %d elements", page, pwned, injected)
	}
	body := get(t, ctx, chromedp.Evaluate[string](`document.body.innerText`))
	for _, s := range texts {
		if !strings.Contains(body, s) {
			t.Errorf("%s: %q not shown as text in %q", page, s, body)
		}
	}
}

// TestJobSystemPagesInert: the types, schedules, uniques, workers,
// limits, lanes and flows pages, the job list and the job page show the
// job system's data, hostile strings as text: no dialog, no script, no
// element injected.
func TestJobSystemPagesInert(t *testing.T) {
	jd := newJobDash(t)
	ctx := browser(t)
	for _, c := range []struct {
		path  string
		texts []string
	}{
		{"/queues/q/types", []string{evilType, "mail:send"}},
		{"/queues/q", []string{evilType}},
		{"/queues/q/jobs/" + jd.typed, []string{evilType}},
		{"/queues/q/schedules", []string{evilSched, "@every 1h"}},
		{"/queues/q/uniques", []string{evilKey, jd.owner}},
		{"/queues/q/workers", []string{evilHost, "77"}},
		{"/queues/q/limits", []string{"no limit"}},
		{"/queues/lq/lanes", []string{evilLane, "halted", jd.haltedBy}},
		{"/queues/lq/flows", []string{jd.flow}},
		{"/queues/lq/flows/" + jd.flow, []string{"running"}},
	} {
		run(t, ctx, chromedp.Navigate(jd.url+c.path), chromedp.WaitVisible(chromedp.CSS("main h1")))
		inert(t, ctx, c.path, c.texts...)
		if c.path == "/queues/q/types" {
			shot(t, ctx, "web-types.png")
		}
	}
	// The unique key looked up through the page's form.
	run(t, ctx, chromedp.Navigate(jd.url+"/queues/q/uniques"), chromedp.SendKeys(chromedp.CSS(`input[name=key]`), evilKey))
	follow(t, ctx, "lookup", `!!document.getElementById("lookup-result")`)
	inert(t, ctx, "uniques lookup", "held by", jd.owner)
}

// TestJobSystemActionsClicked: Resume on a halted lane, Cancel on a
// running flow and "Delete every matching dead job" pressed in the page
// change the server's state: the lane runs on, the flow has failed, only
// the matching dead jobs are gone.
func TestJobSystemActionsClicked(t *testing.T) {
	jd := newJobDash(t)
	ctx := browser(t)
	bg := context.Background()
	for range 3 {
		jd.enqueue("d")
	}
	// Claim them in id order behind the typed jobs: kill every pending job.
	var boom, other []string
	for i := 0; ; i++ {
		n, _ := jd.q.Count(bg, emq.StatePending)
		if n == 0 {
			break
		}
		if i%2 == 0 {
			boom = append(boom, jd.kill("boom: "+strconv.Itoa(i)))
		} else {
			other = append(other, jd.kill("other"))
		}
	}

	run(t, ctx, chromedp.Navigate(jd.url+"/queues/lq/lanes"), chromedp.WaitVisible(chromedp.CSS("button[data-resume]")))
	run(t, ctx, chromedp.Evaluate[chromedp.Void](`window.__old = true`), chromedp.Click(chromedp.CSS("button[data-resume]")))
	waitFor(t, ctx, `!window.__old && document.readyState === "complete" && !!document.getElementById("msg")`)
	inert(t, ctx, "lanes after resume", "resumed")
	if li, err := jd.lq.Lane(bg, evilLane); err != nil || li.Halted {
		t.Errorf("lane after Resume: %+v %v", li, err)
	}

	run(t, ctx, chromedp.Navigate(jd.url+"/queues/lq/flows/"+jd.flow))
	press(t, ctx, "cancel-flow")
	if fi, err := jd.lq.Flow(bg, jd.flow); err != nil || fi.State != emq.FlowFailed {
		t.Errorf("flow after Cancel: %+v %v", fi, err)
	}
	state := get(t, ctx, chromedp.Text(chromedp.ID("flow-state")))
	if state != "failed" {
		t.Errorf("the page shows the flow %q", state)
	}

	run(t, ctx, chromedp.Navigate(jd.url+"/queues/q/dead?prefix=boom"), chromedp.WaitVisible(chromedp.ID("delete-matching")))
	press(t, ctx, "delete-matching")
	for _, id := range boom {
		if raw(t, "EXISTS", "emq:{q}:job:"+id) != "0" || raw(t, "ZSCORE", "emq:{q}:dead", id) != "" {
			t.Errorf("%s matched boom and is still there", id)
		}
	}
	for _, id := range other {
		if raw(t, "ZSCORE", "emq:{q}:dead", id) == "" {
			t.Errorf("%s did not match and was deleted", id)
		}
	}
	msg := get(t, ctx, chromedp.Text(chromedp.ID("msg")))
	if want := "deleted " + strconv.Itoa(len(boom)) + " dead jobs"; msg != want {
		t.Errorf("message %q, want %q", msg, want)
	}
}
