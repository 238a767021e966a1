package web

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/echomq/echomq-go/cluster"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/internal/servertest"
)

// TestOnCluster: on a 3-primary cluster the dashboard finds the queues
// from the registry (no scan), each on its own slot, and reads their
// counts, lists and jobs; a dashboard over a replica is read-only by
// itself, with no action route.
func TestOnCluster(t *testing.T) {
	c, err := servertest.StartCluster(3, 1, servertest.Options{})
	if err != nil {
		if servertest.InCI() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	defer c.Stop()
	ctx := tctx(t)
	cl, err := cluster.NewClient(ctx, cluster.Options{Seeds: []string{c.Primaries[0].Addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	names := []string{"alpha", "beta", "gamma", "delta"}
	if err := RegisterQueues(ctx, cl, names...); err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for i, n := range names {
		q, err := emq.Open(ctx, cl, n)
		if err != nil {
			t.Fatal(err)
		}
		for range i + 1 {
			if ids[n], err = q.Enqueue(ctx, []byte("job of "+n)); err != nil {
				t.Fatal(err)
			}
		}
	}
	h, err := New(ctx, Options{Sender: cl, Registry: true, StatsTTL: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if h.ReadOnly() {
		t.Fatal("a dashboard over the cluster's primaries is read-only")
	}
	ts := httptest.NewServer(h)
	defer ts.Close()
	get := func(path string) (int, string) {
		res, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	_, body := get("/api/overview")
	for i, n := range names {
		if want := `"name":"` + n + `","pending":` + string(rune('1'+i)); !strings.Contains(body, want) {
			t.Errorf("overview lacks %s: %s", want, body)
		}
	}
	for _, n := range names {
		if code, body := get("/queues/" + n); code != 200 || !strings.Contains(body, ids[n]) {
			t.Errorf("/queues/%s: %d", n, code)
		}
		if code, body := get("/queues/" + n + "/jobs/" + ids[n]); code != 200 || !strings.Contains(body, "job of "+n) {
			t.Errorf("job page of %s: %d", n, code)
		}
	}

	// A replica: read-only by itself.
	rep := c.Replicas[0]
	rc, err := conn.NewClient(ctx, conn.Options{Addr: rep.Addr})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	rh, err := New(ctx, Options{Sender: rc, Queues: []string{"alpha"}})
	if err != nil {
		t.Fatal(err)
	}
	defer rh.Close()
	if !rh.ReadOnly() {
		t.Fatal("a dashboard over a replica is not read-only")
	}
	rts := httptest.NewServer(rh)
	defer rts.Close()
	res, err := http.Post(rts.URL+"/queues/alpha/pause", "application/x-www-form-urlencoded", strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 404 && res.StatusCode != 405 {
		t.Errorf("POST on the replica's dashboard: %d", res.StatusCode)
	}
}
