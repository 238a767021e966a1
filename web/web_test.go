package web

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/internal/servertest"
)

var srv *servertest.Server

func TestMain(m *testing.M) {
	os.Exit(servertest.Main(m, &srv, servertest.Options{}))
}

func tctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// fixture is a dashboard over a fresh server, served by httptest, with a
// client that keeps cookies.
type fixture struct {
	t   *testing.T
	cl  *conn.Client
	h   *Handler
	ts  *httptest.Server
	hc  *http.Client
	q   *emq.Queue
	pre string
}

func newFixture(t *testing.T, opts Options, queues ...string) *fixture {
	t.Helper()
	servertest.Need(t, srv)
	srv.Flush(t)
	cl, err := conn.NewClient(tctx(t), conn.Options{Addr: srv.Addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	opts.Sender = cl
	if opts.StatsTTL == 0 {
		opts.StatsTTL = -1 // every read fresh: the tests change state between reads
	}
	if opts.Queues == nil {
		opts.Queues = queues
	}
	h, err := New(tctx(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	mux := http.NewServeMux()
	mux.Handle(opts.Prefix+"/", h)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	f := &fixture{t: t, cl: cl, h: h, ts: ts, hc: hc, pre: opts.Prefix}
	if len(queues) > 0 {
		f.q, err = emq.Open(tctx(t), cl, queues[0])
		if err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// get fetches path (under the prefix) and returns status and body.
func (f *fixture) get(path string) (int, string, http.Header) {
	f.t.Helper()
	res, err := f.hc.Get(f.ts.URL + f.pre + path)
	if err != nil {
		f.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b), res.Header
}

// post submits a form with the given headers.
func (f *fixture) post(path string, form url.Values, hdr map[string]string) (int, string) {
	f.t.Helper()
	req, _ := http.NewRequest("POST", f.ts.URL+f.pre+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := f.hc.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]{64})"`)

// token loads a page and returns its CSRF token (setting the cookie).
func (f *fixture) token(path string) string {
	f.t.Helper()
	_, body, _ := f.get(path)
	m := csrfField.FindStringSubmatch(body)
	if m == nil {
		f.t.Fatalf("no csrf field on %s", path)
	}
	return m[1]
}

func (f *fixture) enqueue(payload string) string {
	f.t.Helper()
	id, err := f.q.Enqueue(tctx(f.t), []byte(payload))
	if err != nil {
		f.t.Fatal(err)
	}
	return id
}

// kill claims the next job and fails it for good, with errText.
func (f *fixture) kill(errText string) string {
	f.t.Helper()
	j, ok, err := f.q.Claim(tctx(f.t), time.Minute)
	if err != nil || !ok {
		f.t.Fatalf("claim: %v %v", ok, err)
	}
	if _, err := f.q.Retry(tctx(f.t), j.ID, j.Token, 0, 1, errText); err != nil {
		f.t.Fatal(err)
	}
	return j.ID
}

func TestOverviewCounts(t *testing.T) {
	f := newFixture(t, Options{Prefix: "/emq"}, "mail")
	for range 3 {
		f.enqueue("x")
	}
	f.kill("boom")
	code, body, hdr := f.get("/")
	if code != 200 {
		t.Fatalf("GET /: %d %s", code, body)
	}
	for _, want := range []string{`data-field="pending">2<`, `data-field="dead">1<`, `href="/emq/queues/mail"`} {
		if !strings.Contains(body, want) {
			t.Errorf("overview lacks %s", want)
		}
	}
	if got := hdr.Get("Content-Security-Policy"); !strings.Contains(got, "frame-ancestors 'none'") || strings.Contains(got, "unsafe-inline") {
		t.Errorf("CSP %q", got)
	}
	if hdr.Get("X-Content-Type-Options") != "nosniff" {
		t.Error("no nosniff")
	}
	code, body, _ = f.get("/api/overview")
	if code != 200 || !strings.Contains(body, `"name":"mail","pending":2,"active":0,"delayed":0,"dead":1`) {
		t.Errorf("api: %d %s", code, body)
	}
}

func TestRegistryQueues(t *testing.T) {
	f := newFixture(t, Options{Registry: true})
	if err := RegisterQueues(tctx(t), f.cl, "a", "b"); err != nil {
		t.Fatal(err)
	}
	if err := RegisterQueues(tctx(t), f.cl, "ok", "bad{"); err == nil {
		t.Error("RegisterQueues took an invalid name")
	}
	f.h.st.mu.Lock()
	f.h.st.names = nil
	f.h.st.mu.Unlock()
	_, body, _ := f.get("/api/overview")
	if !strings.Contains(body, `"name":"a"`) || !strings.Contains(body, `"name":"b"`) || strings.Contains(body, `"ok"`) {
		t.Errorf("registry overview: %s", body)
	}
}

func TestBadInputAndNotFound(t *testing.T) {
	f := newFixture(t, Options{}, "q")
	id := f.enqueue("p")
	cases := []struct {
		path string
		code int
		msg  string
	}{
		{"/queues/nope", 404, "unknown queue"},
		{"/queues/" + url.PathEscape("a{b"), 400, "invalid queue"},
		{"/queues/q?state=gone", 400, "want pending, active, delayed or dead"},
		{"/queues/q?n=0", 400, "page size"},
		{"/queues/q?after=xyz", 400, "bad cursor"},
		{"/queues/q?after=0.JOB0KHTOWnGLuC&before=0.JOB0KHTOWnGLuC", 400, "not both"},
		{"/queues/q/jobs/notanid", 400, "not a job id"},
		{"/queues/q/jobs/JOB0KHTOWnGLuC", 404, "no such job"},
		{"/queues/q/jobs/JOB0KHTOWnGLuC/payload", 404, "no such job"},
		{"/queues/q/dead?older=soon", 400, "want a duration"},
		{"/queues/q/jobs/" + id, 200, id},
		{"/nowhere", 404, "no such page"},
	}
	for _, c := range cases {
		code, body, hdr := f.get(c.path)
		if code != c.code || !strings.Contains(body, c.msg) {
			t.Errorf("GET %s: %d %q, want %d with %q", c.path, code, clip(body, 200), c.code, c.msg)
		}
		if code >= 400 && !strings.HasPrefix(hdr.Get("Content-Type"), "text/plain") {
			t.Errorf("GET %s: error as %s", c.path, hdr.Get("Content-Type"))
		}
	}
}

// TestHostilePayloadEscaped: a payload, an error and field values
// holding markup, script-breaking bytes and invalid UTF-8 are rendered
// as text; the raw download is the bytes, as an attachment.
func TestHostilePayloadEscaped(t *testing.T) {
	f := newFixture(t, Options{}, "q")
	hostile := "<script>alert(1)</script>\"'></pre><img src=x onerror=alert(2)>\u2028\xff\xfe</script><!--"
	id := f.enqueue(hostile)
	j, _, _ := f.q.Claim(tctx(t), time.Minute)
	f.q.Retry(tctx(t), j.ID, j.Token, 0, 1, "<b>bold</b>\xc3")
	for _, path := range []string{"/queues/q/jobs/" + id, "/queues/q?state=dead", "/queues/q/dead"} {
		code, body, _ := f.get(path)
		if code != 200 {
			t.Fatalf("%s: %d", path, code)
		}
		for _, bad := range []string{"<script>alert", "<img src=x", "<b>bold", "\xff", "\xc3<"} {
			if strings.Contains(body, bad) {
				t.Errorf("%s holds %q unescaped", path, bad)
			}
		}
		if strings.Count(body, "<script") != 1 { // the page's own app.js
			t.Errorf("%s: %d script tags", path, strings.Count(body, "<script"))
		}
	}
	_, body, _ := f.get("/queues/q/jobs/" + id)
	if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") && !strings.Contains(body, "3c 73 63 72") {
		t.Errorf("payload not shown escaped: %s", body)
	}
	res, err := f.hc.Get(f.ts.URL + "/queues/q/jobs/" + id + "/payload")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if string(raw) != hostile || res.Header.Get("Content-Type") != "application/octet-stream" ||
		!strings.HasPrefix(res.Header.Get("Content-Disposition"), "attachment;") {
		t.Errorf("download: %q %v", raw, res.Header)
	}
}

func TestBigPayloadTruncated(t *testing.T) {
	f := newFixture(t, Options{}, "q")
	big := strings.Repeat("a", 10<<20)
	id := f.enqueue(big)
	code, body, _ := f.get("/queues/q/jobs/" + id)
	if code != 200 || len(body) > 64<<10 || !strings.Contains(body, "the first bytes shown") {
		t.Fatalf("10 MB payload: %d, page of %d bytes", code, len(body))
	}
	_, list, _ := f.get("/queues/q")
	if !strings.Contains(list, "10.0 MiB") || len(list) > 64<<10 {
		t.Errorf("list: %d bytes", len(list))
	}
}

// TestPagination walks pending forwards and back, and a scored set with
// ties at one score, and checks every id is seen once, in order.
func TestPagination(t *testing.T) {
	f := newFixture(t, Options{}, "q")
	var ids []string
	for range 23 {
		ids = append(ids, f.enqueue("p"))
	}
	link := regexp.MustCompile(`id="next" href="[^"]*?after=([^"&]+)|href="[^"]*?after=([^"&]+)" id="next"`)
	rowID := regexp.MustCompile(`<tr data-id="(JOB[0-9A-Za-z]{11})"`)
	walk := func(state string) []string {
		var seen []string
		path := "/queues/q?state=" + state + "&n=5"
		for range 20 {
			code, body, _ := f.get(path)
			if code != 200 {
				t.Fatalf("%s: %d %s", path, code, body)
			}
			for _, m := range rowID.FindAllStringSubmatch(body, -1) {
				seen = append(seen, m[1])
			}
			m := link.FindStringSubmatch(body)
			if m == nil {
				return seen
			}
			next := m[1] + m[2]
			path = "/queues/q?state=" + state + "&n=5&after=" + next
		}
		t.Fatal("no end")
		return nil
	}
	if got := walk("pending"); strings.Join(got, ",") != strings.Join(ids, ",") {
		t.Errorf("pending walk:\n got %v\nwant %v", got, ids)
	}
	// Backward from the last page's first id.
	code, body, _ := f.get("/queues/q?state=pending&n=5&before=0." + ids[20])
	got := rowID.FindAllStringSubmatch(body, -1)
	if code != 200 || len(got) != 5 || got[0][1] != ids[15] || got[4][1] != ids[19] {
		t.Errorf("before: %d %v", code, got)
	}
	// A scored set with 30 ties at one score (more than tieSlack + page).
	var dead []string
	args := []string{"ZADD", "emq:{q}:dead"}
	for i := range 30 {
		id, _ := emq.FormatID("JOB", uint64(1000+i))
		dead = append(dead, id)
		args = append(args, "5", id)
	}
	for i := range 4 {
		id, _ := emq.FormatID("JOB", uint64(2000+i))
		dead = append(dead, id)
		args = append(args, strconv.Itoa(6+i), id)
	}
	if _, err := srv.Do(args...); err != nil {
		t.Fatal(err)
	}
	if got := walk("dead"); strings.Join(got, ",") != strings.Join(dead, ",") {
		t.Errorf("dead walk with ties:\n got %v\nwant %v", got, dead)
	}
}

func TestDeadFilterBounded(t *testing.T) {
	f := newFixture(t, Options{}, "q")
	for i := range 6 {
		f.enqueue("p")
		if i%2 == 0 {
			f.kill("timeout: slow")
		} else {
			f.kill("refused")
		}
	}
	_, body, _ := f.get("/queues/q/dead?prefix=" + url.QueryEscape("timeout:"))
	if n := strings.Count(body, "<tr data-id="); n != 3 {
		t.Errorf("prefix filter: %d rows", n)
	}
	_, body, _ = f.get("/queues/q/dead?older=1h")
	if n := strings.Count(body, "<tr data-id="); n != 0 {
		t.Errorf("older=1h: %d rows", n)
	}
	_, body, _ = f.get("/queues/q/dead?newer=1h&n=2")
	if n := strings.Count(body, "<tr data-id="); n != 2 || !strings.Contains(body, `id="next"`) {
		t.Errorf("newer=1h n=2: %d rows, next link %v", n, strings.Contains(body, `id="next"`))
	}
}

// TestCSRFRefused: a POST without the token, with a wrong one, or from
// another origin is 403 and changes nothing; with the token it pauses.
func TestCSRFRefused(t *testing.T) {
	f := newFixture(t, Options{}, "q")
	tok := f.token("/queues/q")
	paused := func() bool {
		p, err := f.q.Paused(tctx(t))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		name string
		form url.Values
		hdr  map[string]string
	}{
		{"no token", url.Values{}, nil},
		{"wrong token", url.Values{"csrf": {strings.Repeat("0", 64)}}, nil},
		{"other origin", url.Values{"csrf": {tok}}, map[string]string{"Origin": "http://evil.example"}},
		{"cross-site fetch", url.Values{"csrf": {tok}}, map[string]string{"Sec-Fetch-Site": "cross-site"}},
	} {
		code, body := f.post("/queues/q/pause", c.form, c.hdr)
		if code != 403 {
			t.Errorf("%s: %d %s", c.name, code, body)
		}
		if paused() {
			t.Fatalf("%s: the queue was paused", c.name)
		}
	}
	// A request without the cookie but with a token copied from a page.
	req, _ := http.NewRequest("POST", f.ts.URL+"/queues/q/pause", strings.NewReader("csrf="+tok))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, _ := http.DefaultClient.Do(req)
	if res.StatusCode != 403 || paused() {
		t.Errorf("no cookie: %d", res.StatusCode)
	}
	res.Body.Close()
	if code, _ := f.post("/queues/q/pause", url.Values{"csrf": {tok}}, map[string]string{"Origin": f.ts.URL}); code != 303 || !paused() {
		t.Errorf("same origin with token: %d paused %v", code, paused())
	}
	if code, _, _ := f.get("/queues/q/pause"); code != 404 && code != 405 {
		t.Errorf("GET of an action: %d", code)
	}
}

func TestActions(t *testing.T) {
	f := newFixture(t, Options{}, "q")
	keep := f.enqueue("a")
	f.enqueue("b")
	dead := f.kill("e1")
	tok := f.token("/queues/q")
	form := func(kv ...string) url.Values {
		v := url.Values{"csrf": {tok}}
		for i := 0; i < len(kv); i += 2 {
			v.Add(kv[i], kv[i+1])
		}
		return v
	}
	if code, body := f.post("/queues/q/jobs/"+dead+"/requeue", form(), nil); code != 303 {
		t.Fatalf("requeue: %d %s", code, body)
	}
	if n, _ := f.q.Count(tctx(t), emq.StatePending); n != 2 {
		t.Errorf("pending after requeue: %d", n)
	}
	if code, _ := f.post("/queues/q/jobs/"+dead+"/requeue", form(), nil); code != 409 {
		t.Errorf("requeue of a job not dead: %d", code)
	}
	if code, _ := f.post("/queues/q/jobs/"+dead+"/delete", form(), nil); code != 303 {
		t.Errorf("delete: %d", code)
	}
	if code, _ := f.post("/queues/q/jobs/"+dead+"/delete", form(), nil); code != 404 {
		t.Errorf("delete again: %d", code)
	}
	a, b := f.enqueue("c"), f.enqueue("d")
	if code, body := f.post("/queues/q/bulk", form("verb", "delete", "id", a, "id", b), nil); code != 303 {
		t.Errorf("bulk delete: %d %s", code, body)
	}
	if code, _ := f.post("/queues/q/bulk", form("verb", "explode", "id", a), nil); code != 400 {
		t.Errorf("bulk bad verb: %d", code)
	}
	if code, _ := f.post("/queues/q/bulk", form("verb", "delete", "id", "x"), nil); code != 400 {
		t.Errorf("bulk bad id: %d", code)
	}
	later, err := f.q.EnqueueIn(tctx(t), time.Hour, []byte("later"))
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := f.post("/queues/q/jobs/"+keep+"/run", form(), nil); code != 409 {
		t.Errorf("run now of a pending job: %d", code)
	}
	// Cancel: a waiting job ends dead with the reason; a finished one is
	// a conflict, nothing changes.
	doomed, _ := f.q.EnqueueIn(tctx(t), time.Hour, []byte("doomed"))
	if code, body, _ := f.get("/queues/q/jobs/" + doomed); code != 200 || !strings.Contains(body, `id="cancel"`) {
		t.Errorf("job page of a delayed job: %d, cancel button shown %v", code, strings.Contains(body, `id="cancel"`))
	}
	if code, body := f.post("/queues/q/jobs/"+doomed+"/cancel", form(), nil); code != 303 {
		t.Errorf("cancel: %d %s", code, body)
	}
	if got, _ := srv.Do("HGET", "emq:{q}:job:"+doomed, "state"); got != "dead" {
		t.Errorf("after cancel, state %q", got)
	}
	if got, _ := srv.Do("HGET", "emq:{q}:job:"+doomed, "error"); got != "cancelled" {
		t.Errorf("after cancel, error %q", got)
	}
	if code, _ := f.post("/queues/q/jobs/"+doomed+"/cancel", form(), nil); code != 409 {
		t.Errorf("cancel of a dead job: %d, want 409", code)
	}
	if code, body, _ := f.get("/queues/q/jobs/" + doomed); code != 200 || strings.Contains(body, `id="cancel"`) {
		t.Errorf("job page of a dead job: %d, cancel button shown %v", code, strings.Contains(body, `id="cancel"`))
	}
	if _, err := f.q.Delete(tctx(t), doomed); err != nil {
		t.Fatal(err)
	}
	if code, body := f.post("/queues/q/jobs/"+later+"/run", form(), nil); code != 303 {
		t.Errorf("run now: %d %s", code, body)
	}
	if got, _ := srv.Do("ZSCORE", "emq:{q}:pending", later); got != "0" {
		t.Errorf("after run now, pending score %q", got)
	}
	later2, _ := f.q.EnqueueIn(tctx(t), time.Hour, []byte("later"))
	if code, _ := f.post("/queues/q/bulk", form("verb", "run", "id", later2, "id", keep), nil); code != 303 {
		t.Errorf("bulk run: %d", code)
	}
	if got, _ := srv.Do("ZSCORE", "emq:{q}:pending", later2); got != "0" {
		t.Errorf("after bulk run, pending score %q", got)
	}
	f.kill("e2")
	if code, _ := f.post("/queues/q/requeue-dead", form("prefix", "e2"), nil); code != 303 {
		t.Errorf("requeue-dead: %d", code)
	}
	if n, _ := f.q.Count(tctx(t), emq.StateDead); n != 0 {
		t.Errorf("dead after requeue-dead: %d", n)
	}
	f.kill("e3")
	if code, _ := f.post("/queues/q/trim", form("all", "1"), nil); code != 303 {
		t.Errorf("trim: %d", code)
	}
	if n, _ := f.q.Count(tctx(t), emq.StateDead); n != 0 {
		t.Errorf("dead after trim: %d", n)
	}
	if code, _ := f.post("/queues/q/trim", form(), nil); code != 400 {
		t.Errorf("trim without bounds: %d", code)
	}
	// A back field naming another site is ignored.
	req := form("back", "https://evil.example/")
	f.post("/queues/q/pause", req, nil)
	res, _ := f.hc.PostForm(f.ts.URL+"/queues/q/resume", req)
	if loc := res.Header.Get("Location"); !strings.HasPrefix(loc, "/queues/q?") {
		t.Errorf("redirect to %q", loc)
	}
	res.Body.Close()
}

// TestReadOnly: no action route exists and no form is shown.
func TestReadOnly(t *testing.T) {
	f := newFixture(t, Options{ReadOnly: true}, "q")
	id := f.enqueue("p")
	_, body, hdr := f.get("/queues/q")
	if strings.Contains(body, `method="post"`) || strings.Contains(body, `name="csrf"`) || hdr.Get("Set-Cookie") != "" {
		t.Error("read-only page shows a form or sets a cookie")
	}
	_, body, _ = f.get("/queues/q/jobs/" + id)
	if strings.Contains(body, `method="post"`) {
		t.Error("read-only job page shows a form")
	}
	for _, p := range []string{"/queues/q/pause", "/queues/q/jobs/" + id + "/delete", "/queues/q/bulk", "/queues/q/trim"} {
		if code, _ := f.post(p, url.Values{"verb": {"delete"}, "id": {id}, "all": {"1"}}, nil); code != 404 && code != 405 {
			t.Errorf("POST %s in read-only: %d", p, code)
		}
	}
	if p, _ := f.q.Paused(tctx(t)); p {
		t.Error("paused in read-only")
	}
	if n, _ := f.q.Count(tctx(t), emq.StatePending); n != 1 {
		t.Error("job deleted in read-only")
	}
}

func TestMiddlewareAndSection(t *testing.T) {
	mw := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Auth") != "yes" {
				http.Error(w, "who are you", http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	sec := Section{Path: "types", Title: "Types", Render: func(context.Context, *http.Request) (HTMLBody, error) {
		return "<p id=types>none yet</p>", nil
	}}
	f := newFixture(t, Options{Middleware: mw, Sections: []Section{sec}}, "q")
	if code, _, _ := f.get("/"); code != 401 {
		t.Errorf("no auth: %d", code)
	}
	if code, _ := f.post("/queues/q/pause", url.Values{}, nil); code != 401 {
		t.Errorf("no auth POST: %d", code)
	}
	req, _ := http.NewRequest("GET", f.ts.URL+"/x/types", nil)
	req.Header.Set("X-Auth", "yes")
	res, err := f.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(b), "<p id=types>none yet</p>") || !strings.Contains(string(b), `href="/x/types"`) {
		t.Errorf("section: %d %s", res.StatusCode, b)
	}
}

func TestNewRefuses(t *testing.T) {
	servertest.Need(t, srv)
	cl, err := conn.NewClient(tctx(t), conn.Options{Addr: srv.Addr})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, o := range []Options{
		{},
		{Sender: cl, Queues: []string{"a}"}},
		{Sender: cl, Prefix: "emq"},
		{Sender: cl, Prefix: "/emq/"},
		{Sender: cl, Sections: []Section{{Path: "a/b"}}},
	} {
		if h, err := New(tctx(t), o); err == nil {
			h.Close()
			t.Errorf("New(%+v) took it", o)
		}
	}
}

func TestSamplerChart(t *testing.T) {
	ticks := make(chan int, 100)
	f := newFixture(t, Options{SampleEvery: 20 * time.Millisecond, sampled: func(n int) {
		select {
		case ticks <- n:
		default:
		}
	}}, "q")
	f.enqueue("p")
	for got := 0; got < 3; {
		select {
		case n := <-ticks:
			got += n
		case <-tctx(t).Done():
			t.Fatal("no samples")
		}
	}
	code, body, hdr := f.get("/queues/q/chart.svg")
	if code != 200 || hdr.Get("Content-Type") != "image/svg+xml" || !strings.Contains(body, "<polyline") {
		t.Errorf("chart: %d %s %s", code, hdr.Get("Content-Type"), clip(body, 300))
	}
	f.h.Close()
	// Close waited for the sampler's goroutine: it has returned, so no
	// sample can follow.
	select {
	case <-f.h.smp.done:
	default:
		t.Fatal("the sampler's goroutine runs after Close")
	}
	n := len(f.h.smp.samples("q"))
	for len(ticks) > 0 {
		<-ticks
	}
	if len(f.h.smp.samples("q")) != n {
		t.Error("sampler ran after Close")
	}
}

// TestHostileQueueName: a valid queue name full of markup is escaped in
// every page, and its links are path-escaped.
func TestHostileQueueName(t *testing.T) {
	name := `<img src=x onerror=alert(1)>"'/&?#`
	f := newFixture(t, Options{}, name)
	id := f.enqueue("p")
	esc := "/queues/" + url.PathEscape(name)
	for _, p := range []string{"/", esc, esc + "/jobs/" + id, esc + "/dead"} {
		code, body, _ := f.get(p)
		if code != 200 {
			t.Fatalf("%s: %d %s", p, code, body)
		}
		if strings.Contains(body, "<img src=x") {
			t.Errorf("%s holds the name unescaped", p)
		}
	}
	tok := f.token(esc)
	if code, body := f.post(esc+"/pause", url.Values{"csrf": {tok}}, nil); code != 303 {
		t.Errorf("pause: %d %s", code, body)
	}
	if p, _ := f.q.Paused(tctx(t)); !p {
		t.Error("not paused")
	}
}

// TestBinaryPayloadHex: a payload that is not text shows as a hex dump.
func TestBinaryPayloadHex(t *testing.T) {
	f := newFixture(t, Options{}, "q")
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	id := f.enqueue(string(b))
	_, body, _ := f.get("/queues/q/jobs/" + id)
	if !strings.Contains(body, "binary (hex)") || !strings.Contains(body, "00000000  00 01 02 03") {
		t.Errorf("binary payload: %s", clip(body, 2000))
	}
}

// TestPageOfTiesBothWays: pages of a set whose members share one score,
// more than a page and the slack, walked backward from the end, and from
// a cursor whose member left the set, see each member once, in order.
func TestPageOfTiesBothWays(t *testing.T) {
	f := newFixture(t, Options{}, "q")
	key := "emq:{q}:dead"
	var all []member
	args := []string{"ZADD", key}
	for i := range 40 {
		id, _ := emq.FormatID("JOB", uint64(5000+i))
		sc := int64(7)
		if i >= 35 {
			sc = int64(8 + i)
		}
		all = append(all, member{ID: id, Score: sc})
		args = append(args, strconv.FormatInt(sc, 10), id)
	}
	if _, err := srv.Do(args...); err != nil {
		t.Fatal(err)
	}
	ctx := tctx(t)
	// Backward from past the end.
	var back []member
	cur, has := cursor{}, false
	for range 20 {
		ms, more, err := pageOf(ctx, f.cl, key, false, cur, has, true, -1, 4)
		if err != nil {
			t.Fatal(err)
		}
		back = append(back, ms...)
		if !more || len(ms) == 0 {
			break
		}
		cur, has = cursor{ms[len(ms)-1].Score, ms[len(ms)-1].ID}, true
	}
	slices.Reverse(back)
	if !slices.Equal(back, all) {
		t.Errorf("backward walk:\n got %v\nwant %v", back, all)
	}
	// A cursor whose member was removed, deep in the ties: the page
	// resumes past its score.
	gone := all[20]
	if _, err := srv.Do("ZREM", key, gone.ID); err != nil {
		t.Fatal(err)
	}
	ms, _, err := pageOf(ctx, f.cl, key, false, cursor{gone.Score, gone.ID}, true, false, -1, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 3 || ms[0] != all[21] {
		t.Errorf("after a removed cursor: %v, want from %v", ms, all[21])
	}
	ms, _, err = pageOf(ctx, f.cl, key, false, cursor{gone.Score, gone.ID}, true, true, -1, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 3 || ms[0] != all[19] || ms[2] != all[17] {
		t.Errorf("before a removed cursor: %v, want from %v back", ms, all[19])
	}
}
