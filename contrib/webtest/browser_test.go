package webtest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/resp"
	"github.com/echomq/echomq-go/web"
)

var srv *servertest.Server

func TestMain(m *testing.M) {
	os.Exit(servertest.Main(m, &srv, servertest.Options{}))
}

// chromium finds Debian's chromium (scripts/test.sh installs it with
// apt-get when missing under CI=true); without it the test is skipped,
// or fails under CI=true.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if servertest.InCI() {
		t.Fatal("no chromium on PATH (apt-get install -y chromium; scripts/test.sh does under CI=true)")
	}
	t.Skip("no chromium on PATH (apt-get install -y chromium): browser tests skipped")
	return ""
}

// browser starts a headless Chromium with a fresh profile, closed at the
// test's end; a JavaScript dialog (alert, confirm) fails the test.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := chromium(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1200, 900),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelB := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(bctx, 90*time.Second)
	t.Cleanup(func() { cancelT(); cancelB(); cancelA() })
	if err := chromedp.Do(ctx); err != nil {
		if servertest.InCI() {
			t.Fatalf("chromium %s does not start: %v", path, err)
		}
		t.Skipf("chromium %s does not start: %v", path, err)
	}
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			t.Errorf("a JavaScript dialog opened: %q", ev.Message)
			chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}
	}()
	return ctx
}

// dash is a dashboard over the test server for queue q, served by
// httptest.
type dash struct {
	t   *testing.T
	q   *emq.Queue
	url string
	h   *web.Handler
}

func newDash(t *testing.T, opts web.Options, queues ...string) *dash {
	t.Helper()
	servertest.Need(t, srv)
	srv.Flush(t)
	ctx := context.Background()
	cl, err := conn.NewClient(ctx, conn.Options{Addr: srv.Addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	if len(queues) == 0 {
		queues = []string{"q"}
	}
	opts.Sender, opts.Queues = cl, queues
	if opts.StatsTTL == 0 {
		opts.StatsTTL = -1
	}
	if opts.PollEvery == 0 {
		opts.PollEvery = 200 * time.Millisecond
	}
	opts.Prefix = "/emq"
	h, err := web.New(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	mux := http.NewServeMux()
	mux.Handle("/emq/", h)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	q, err := emq.Open(ctx, cl, "q")
	if err != nil {
		t.Fatal(err)
	}
	return &dash{t: t, q: q, url: ts.URL + "/emq", h: h}
}

func (d *dash) enqueue(payload string) string {
	d.t.Helper()
	id, err := d.q.Enqueue(context.Background(), []byte(payload))
	if err != nil {
		d.t.Fatal(err)
	}
	return id
}

func (d *dash) kill(errText string) string {
	d.t.Helper()
	ctx := context.Background()
	j, ok, err := d.q.Claim(ctx, time.Minute)
	if err != nil || !ok {
		d.t.Fatalf("claim: %v %v", ok, err)
	}
	if _, err := d.q.Retry(ctx, j.ID, j.Token, 0, 1, errText); err != nil {
		d.t.Fatal(err)
	}
	return j.ID
}

// raw runs a command on the server through servertest's own client.
func raw(t *testing.T, args ...string) string {
	t.Helper()
	r, err := srv.Do(args...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func cell(field string) string {
	return `tr[data-queue="q"] [data-field="` + field + `"]`
}

// run runs the steps, failing the test on an error.
func run(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

// press clicks the button id, whose form posts and redirects, and waits
// for the new page with its message: a mark on the old page tells the
// pages apart, so no step runs on the page being left.
func press(t *testing.T, ctx context.Context, id string) {
	t.Helper()
	follow(t, ctx, id, `!!document.getElementById("msg")`)
}

// follow clicks the element id, which leaves the page, and waits for the
// new page, loaded, where the expression ready holds.
func follow(t *testing.T, ctx context.Context, id, ready string) {
	t.Helper()
	run(t, ctx, chromedp.Evaluate[chromedp.Void](`window.__old = true`), chromedp.Click(chromedp.ID(id)))
	waitFor(t, ctx, `!window.__old && document.readyState === "complete" && `+ready)
}

// waitFor waits until expr is true on the page, for 30 s at most:
// chromedp's Poll evaluates it at each animation frame in the page. An
// error (the page navigating away under the poll destroys its context)
// waits for the next document's body, then polls again.
func waitFor(t *testing.T, ctx context.Context, expr string) {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		ok, err := chromedp.Run(wctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(30*time.Second)))
		if err == nil && ok {
			return
		}
		if wctx.Err() != nil {
			t.Fatalf("waited 30s for %s (last error %v)", expr, err)
		}
		chromedp.Run(wctx, chromedp.WaitReady(chromedp.CSS("body")))
	}
}

// get runs one action and returns its value.
func get[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// shot saves a PNG screenshot (quality 100 is PNG; less is JPEG) when
// EMQ_WEB_SHOTS names a directory.
func shot(t *testing.T, ctx context.Context, name string) {
	dir := os.Getenv("EMQ_WEB_SHOTS")
	if dir == "" {
		return
	}
	b := get(t, ctx, chromedp.FullScreenshot(100))
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		t.Error(err)
	}
}

// TestOverviewShowsServerCounts: the overview's counts are the server's.
func TestOverviewShowsServerCounts(t *testing.T) {
	ticks := make(chan struct{}, 100)
	// Counters is called at each of the sampler's ticks: the test's
	// signal (ok false: the chart draws the sets, as without it).
	d := newDash(t, web.Options{SampleEvery: 100 * time.Millisecond, Counters: func(string) (uint64, uint64, bool) {
		select {
		case ticks <- struct{}{}:
		default:
		}
		return 0, 0, false
	}})
	ctx := browser(t)
	for range 7 {
		d.enqueue(`{"to":"a@example.com"}`)
	}
	d.kill("smtp: 550 mailbox unavailable")
	d.kill("smtp: timeout")
	run(t, ctx, chromedp.Navigate(d.url+"/"))
	pending := get(t, ctx, chromedp.Text(chromedp.CSS(cell("pending"))))
	dead := get(t, ctx, chromedp.Text(chromedp.CSS(cell("dead"))))
	if want := raw(t, "ZCARD", "emq:{q}:pending"); pending != want {
		t.Errorf("pending shown %q, server %q", pending, want)
	}
	if want := raw(t, "ZCARD", "emq:{q}:dead"); dead != want {
		t.Errorf("dead shown %q, server %q", dead, want)
	}
	for range 6 { // a few samples for the screenshot's chart
		select {
		case <-ticks:
		case <-ctx.Done():
			t.Fatal("no samples")
		}
	}
	run(t, ctx, chromedp.Reload())
	shot(t, ctx, "web-overview.png")
}

// TestPaginationWalks: next → until the end shows every pending id once,
// in the server's order.
func TestPaginationWalks(t *testing.T) {
	d := newDash(t, web.Options{})
	ctx := browser(t)
	for range 12 {
		d.enqueue("p")
	}
	want := strings.Fields(strings.ReplaceAll(raw(t, "ZRANGE", "emq:{q}:pending", "0", "-1"), "\n", " "))
	var seen []string
	run(t, ctx, chromedp.Navigate(d.url+"/queues/q?state=pending&n=5"))
	for range 10 {
		ids := get(t, ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("tr[data-id]")).map(r => r.dataset.id)`))
		seen = append(seen, ids...)
		if !get(t, ctx, chromedp.Evaluate[bool](`!!document.getElementById("next")`)) {
			break
		}
		follow(t, ctx, "next", `!!document.getElementById("jobs")`)
	}
	if strings.Join(seen, " ") != strings.Join(want, " ") {
		t.Errorf("walked\n%v\nserver\n%v", seen, want)
	}
}

// TestHostilePayloadInert: a job page shows a payload and an error full
// of markup as text: no script runs, no dialog opens, no element is
// injected.
func TestHostilePayloadInert(t *testing.T) {
	d := newDash(t, web.Options{})
	ctx := browser(t)
	payload := `<script>window.__pwned=1;alert(1)</script><img src=x onerror="window.__pwned=2;alert(2)">` + "\xff\xfe</pre>"
	id := d.enqueue(payload)
	d.kill(`<svg onload="alert(3)"></svg>`)
	run(t, ctx, chromedp.Navigate(d.url+"/queues/q/jobs/"+id), chromedp.WaitVisible(chromedp.ID("payload")))
	shown := get(t, ctx, chromedp.Text(chromedp.ID("payload")))
	pwned := get(t, ctx, chromedp.Evaluate[bool](`window.__pwned !== undefined`))
	injected := get(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("#payload *, #error *, img:not([data-chart]), svg").length`))
	if pwned || injected != 0 {
		t.Errorf("payload ran or injected: pwned %v, %d elements", pwned, injected)
	}
	if !strings.Contains(shown, "<script>window.__pwned=1") && !strings.Contains(shown, "3c 73 63") {
		t.Errorf("payload not shown as text: %q", shown)
	}
	shot(t, ctx, "web-job.png")
}

// TestClickActions: requeue, delete, run now and pause pressed in the page change
// the server's state.
func TestClickActions(t *testing.T) {
	d := newDash(t, web.Options{})
	ctx := browser(t)
	d.enqueue("a")
	deadID := d.kill("boom")
	run(t, ctx, chromedp.Navigate(d.url+"/queues/q/jobs/"+deadID))
	press(t, ctx, "requeue")
	if got := raw(t, "ZSCORE", "emq:{q}:pending", deadID); got != "0" {
		t.Errorf("after requeue, pending score %q", got)
	}
	state := get(t, ctx, chromedp.Text(chromedp.ID("state")))
	if state != "pending" {
		t.Errorf("page shows state %q after requeue", state)
	}
	run(t, ctx)
	press(t, ctx, "delete")
	if got := raw(t, "EXISTS", "emq:{q}:job:"+deadID); got != "0" {
		t.Errorf("row after delete: EXISTS %s", got)
	}
	later, err := d.q.EnqueueIn(context.Background(), time.Hour, []byte("later"))
	if err != nil {
		t.Fatal(err)
	}
	run(t, ctx, chromedp.Navigate(d.url+"/queues/q/jobs/"+later))
	press(t, ctx, "run-now")
	if got := raw(t, "ZSCORE", "emq:{q}:pending", later); got != "0" {
		t.Errorf("after run now, pending score %q", got)
	}
	run(t, ctx, chromedp.Navigate(d.url+"/queues/q"))
	press(t, ctx, "pause-toggle")
	if got := raw(t, "HGET", "emq:{q}:meta", "paused"); got != "1" {
		t.Errorf("paused flag %q after pause", got)
	}
	label := get(t, ctx, chromedp.Text(chromedp.ID("pause-toggle")))
	if label != "Resume" {
		t.Errorf("button after pause: %q", label)
	}
}

// TestPauseStopsWorker: a worker claims nothing while the page's Pause
// holds, however many rounds it polls, and runs the job after Resume.
func TestPauseStopsWorker(t *testing.T) {
	d := newDash(t, web.Options{})
	ctx := browser(t)
	ranCh := make(chan struct{}, 1)
	sends := make(chan struct{}, 1)
	// The worker's own queue, over a Sender that signals each exchange
	// (its claim rounds).
	wq, err := emq.Open(context.Background(), &signalling{Sender: d.q.Sender(), ch: sends}, "q")
	if err != nil {
		t.Fatal(err)
	}
	var ran atomic.Int64
	w, err := emq.NewWorker(wq, emq.HandlerFunc(func(context.Context, *emq.Job) error {
		ran.Add(1)
		select {
		case ranCh <- struct{}{}:
		default:
		}
		return nil
	}), emq.WorkerConfig{Concurrency: 1, PollMin: 5 * time.Millisecond, PollMax: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	go w.Run(context.Background())
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		w.Shutdown(sctx)
	})
	run(t, ctx, chromedp.Navigate(d.url+"/queues/q"))
	press(t, ctx, "pause-toggle")
	d.enqueue("held")
	r0 := w.Stats().Rounds
	for w.Stats().Rounds < r0+5 {
		select {
		case <-sends:
		case <-ctx.Done():
			t.Fatal("worker made no rounds")
		}
	}
	if n := ran.Load(); n != 0 || raw(t, "ZCARD", "emq:{q}:pending") != "1" {
		t.Fatalf("paused: %d jobs ran", n)
	}
	run(t, ctx)
	press(t, ctx, "pause-toggle")
	select {
	case <-ranCh:
	case <-ctx.Done():
		t.Fatal("the job did not run after resume")
	}
}

// signalling is a conn.Sender that signals ch (without blocking) at each
// submission.
type signalling struct {
	conn.Sender
	ch chan struct{}
}

func (s *signalling) signal() {
	select {
	case s.ch <- struct{}{}:
	default:
	}
}

func (s *signalling) Send(ctx context.Context, cmds conn.Cmds, h conn.Handler) error {
	defer s.signal()
	return s.Sender.Send(ctx, cmds, h)
}

func (s *signalling) Do(ctx context.Context, args ...any) (resp.Value, error) {
	defer s.signal()
	return s.Sender.Do(ctx, args...)
}

// TestReadOnlyHidesAndRefuses: no form or button of an action, and a
// POST from the page itself is refused and changes nothing.
func TestReadOnlyHidesAndRefuses(t *testing.T) {
	d := newDash(t, web.Options{ReadOnly: true})
	ctx := browser(t)
	id := d.enqueue("a")
	run(t, ctx, chromedp.Navigate(d.url+"/queues/q"), chromedp.WaitVisible(chromedp.ID("readonly")))
	forms := get(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("form[method=post]").length`))
	buttons := get(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("button").length`))
	status := get(t, ctx, chromedp.Evaluate[int](`fetch("/emq/queues/q/jobs/`+id+`/delete", {method: "POST"}).then(r => r.status)`,
		chromedp.EvalAwaitPromise))
	if forms != 0 || buttons != 0 {
		t.Errorf("read-only page: %d forms, %d buttons", forms, buttons)
	}
	if status != 404 && status != 405 {
		t.Errorf("POST in read-only: %d", status)
	}
	if raw(t, "EXISTS", "emq:{q}:job:"+id) != "1" {
		t.Error("the job was deleted in read-only mode")
	}
}

// TestLiveUpdate: a count changes on the open page without a reload.
func TestLiveUpdate(t *testing.T) {
	d := newDash(t, web.Options{})
	ctx := browser(t)
	d.enqueue("a")
	run(t, ctx, chromedp.Navigate(d.url+"/"), chromedp.WaitVisible(chromedp.CSS(cell("pending"))),
		chromedp.Evaluate[chromedp.Void](`window.__still = "the same page"`))
	for range 4 {
		d.enqueue("b")
	}
	want := raw(t, "ZCARD", "emq:{q}:pending")
	if want != "5" {
		t.Fatalf("server pending %s", want)
	}
	waitFor(t, ctx, `document.querySelector('`+cell("pending")+`').textContent === "`+want+`"`)
	still := get(t, ctx, chromedp.Evaluate[string](`window.__still`))
	if still != "the same page" {
		t.Errorf("the page was reloaded (marker %q)", still)
	}
}
