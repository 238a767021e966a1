package jobs

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/echomq/echomq-go/emq"
)

// seed reads one of the seeds' scripts, verbatim (testdata).
func seed(t *testing.T, name string) string {
	b, err := os.ReadFile("testdata/" + name + ".lua")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestInteropSeedsOnJobRows: the seeds' @claim2 claims a job the Client
// wrote, its payload the envelope; the core complete settles it. And a job
// the seeds' @enqueue wrote, with an envelope built by hand, runs on its
// Mux route.
func TestInteropSeedsOnJobRows(t *testing.T) {
	c := fresh(t)
	cl := newClient(t, c)
	ctx := tctx(t)
	q := openQueue(t, c, "q")
	k := q.Keys()
	info, err := cl.Enqueue(ctx, NewTask("email:send", []byte("hi")), Queue("q"), MaxRetries(2))
	if err != nil {
		t.Fatal(err)
	}
	out, err := srv.Do("EVAL", seed(t, "seed_claim2"), "3", k.Pending, k.Active, k.Base, "30000")
	if err != nil {
		t.Fatal(err)
	}
	want := info.ID + "\nEMQ1 t=email:send&r=2\nhi\n1"
	if out != want {
		t.Fatalf("@claim2: %q, want %q", out, want)
	}
	if err := q.Complete(ctx, info.ID, 1, 0); err != nil {
		t.Fatal(err)
	}

	got := make(chan string, 1)
	m := NewMux()
	m.HandleFunc("email:", func(_ context.Context, t *Task) ([]byte, error) {
		got <- t.Type + " " + string(t.Body) + " " + strconv.Itoa(t.Retries)
		return nil, nil
	})
	start(t, c, m, ServerConfig{Queues: map[string]int{"q": 1}, Heartbeat: -1})
	id := "JOB0KHTOWnGLuC"
	p, _ := AppendEnvelope(nil, &Envelope{Type: "email:digest", Body: []byte("weekly"), Retries: 1})
	if out, err := srv.Do("EVAL", seed(t, "seed_enqueue"), "2", k.Job(id), k.Pending, id, string(p)); err != nil || out != "1" {
		t.Fatalf("@enqueue: %q, %v", out, err)
	}
	if v := recv(t, got); v != "email:digest weekly 1" {
		t.Fatalf("ran %q", v)
	}
}

// TestInteropPlainQueueReadsJobs: a plain emq.Queue browses and claims
// the jobs a Mux consumer would run: rows with the three core fields, the
// envelope in payload, claimable by the core claim script.
func TestInteropPlainQueueReadsJobs(t *testing.T) {
	c := fresh(t)
	cl := newClient(t, c)
	ctx := tctx(t)
	info, _ := cl.Enqueue(ctx, NewTask("img.resize", []byte{0, 1, 2}), Queue("q"), Timeout(time.Second))
	q := openQueue(t, c, "q", emq.WithExecutorChoice(emq.ExecutorScript))
	page, err := q.Browse(ctx, emq.StatePending, 0, 10)
	if err != nil || len(page) != 1 || page[0].ID != info.ID || page[0].State != emq.StatePending || page[0].Attempts != 0 || page[0].Extra != nil {
		t.Fatalf("Browse: %+v, %v", page, err)
	}
	e, err := ParseEnvelope(page[0].Payload)
	if err != nil || e.Type != "img.resize" || string(e.Body) != "\x00\x01\x02" || e.Timeout != time.Second {
		t.Fatalf("envelope %+v, %v", e, err)
	}
	job, ok, err := q.Claim(ctx, time.Minute)
	if err != nil || !ok || job.ID != info.ID || job.Token != 1 {
		t.Fatalf("Claim: %+v, %v, %v", job, ok, err)
	}
	tasks, err := NewInspector(c).Browse(ctx, "q", emq.StateActive, 0, 10)
	if err != nil || len(tasks) != 1 || tasks[0].Type != "img.resize" || tasks[0].Raw {
		t.Fatalf("Inspector.Browse: %+v, %v", tasks, err)
	}
}
