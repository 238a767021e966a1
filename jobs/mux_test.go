package jobs

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq-go/emq"
)

// named returns a handler answering its name.
func named(name string) HandlerFunc {
	return func(context.Context, *Task) ([]byte, error) { return []byte(name), nil }
}

func TestMuxRouting(t *testing.T) {
	m := NewMux()
	m.Handle("email:send", named("exact"))
	m.Handle("email:", named("email"))
	m.Handle("email:bulk:", named("bulk"))
	m.HandleFunc("img.resize", named("img"))
	var trail []string
	m.Use(func(h Handler) Handler {
		return HandlerFunc(func(ctx context.Context, t *Task) ([]byte, error) {
			trail = append(trail, "outer:"+t.Type)
			return h.ProcessTask(ctx, t)
		})
	}, func(h Handler) Handler {
		return HandlerFunc(func(ctx context.Context, t *Task) ([]byte, error) {
			trail = append(trail, "inner")
			return h.ProcessTask(ctx, t)
		})
	})
	for typ, want := range map[string]string{
		"email:send": "exact", "email:digest": "email", "email:bulk:x": "bulk", "email:bulk:": "bulk",
		"img.resize": "img",
	} {
		trail = trail[:0]
		got, err := m.ProcessTask(context.Background(), &Task{Type: typ})
		if err != nil || string(got) != want {
			t.Errorf("%s: %q, %v; want %q", typ, got, err, want)
		}
		if strings.Join(trail, ",") != "outer:"+typ+",inner" {
			t.Errorf("%s: middleware ran %v", typ, trail)
		}
	}
	// No fallback: an unknown type, and a raw job, fail typed and skip retries.
	for _, task := range []*Task{{Type: "sms:send"}, {Type: "img.resize2"}, {Raw: true, Body: []byte("x")}} {
		_, err := m.ProcessTask(context.Background(), task)
		var ue *UnknownTypeError
		if !errors.As(err, &ue) || !errors.Is(err, ErrUnknownType) || !errors.Is(err, ErrSkipRetry) || ue.Type != task.Type {
			t.Errorf("%+v: %v", task, err)
		}
	}
	// With one, both reach it (a raw job untouched), through the middleware.
	var raw []byte
	m.HandleDefault(HandlerFunc(func(_ context.Context, t *Task) ([]byte, error) {
		raw = t.Body
		return []byte("default"), nil
	}))
	trail = trail[:0]
	if got, err := m.ProcessTask(context.Background(), &Task{Raw: true, Body: []byte("EMQ peer")}); err != nil || string(got) != "default" || string(raw) != "EMQ peer" {
		t.Errorf("raw: %q, %v, body %q", got, err, raw)
	}
	if len(trail) != 2 {
		t.Errorf("middleware around the fallback: %v", trail)
	}
	if _, p := m.Handler(&Task{Type: "sms:send"}); p != "" {
		t.Errorf("fallback pattern %q", p)
	}
	defer func() {
		if recover() == nil {
			t.Error("a pattern registered twice did not panic")
		}
	}()
	m.Handle("email:", named("again"))
}

// TestServerRoutesByType: a Server with a Mux runs every task on its
// route, a peer's raw job on the default handler untouched, and, without
// a default, sends an unknown type to dead at once with the typed error.
func TestServerRoutesByType(t *testing.T) {
	c := fresh(t)
	cl := newClient(t, c)
	ctx := tctx(t)
	got := make(chan string, 16)
	m := NewMux()
	m.HandleFunc("email:", func(_ context.Context, t *Task) ([]byte, error) {
		got <- "email " + t.Type + " " + string(t.Body)
		return nil, nil
	})
	m.HandleFunc("img.resize", func(_ context.Context, t *Task) ([]byte, error) {
		got <- "img " + string(t.Body)
		return nil, nil
	})
	m.HandleDefault(HandlerFunc(func(_ context.Context, t *Task) ([]byte, error) {
		got <- "default " + string(t.Body)
		return nil, nil
	}))
	cfg := ServerConfig{Queues: map[string]int{"a": 1, "b": 1}, Heartbeat: -1}
	s := start(t, c, m, cfg)
	if _, err := cl.Enqueue(ctx, NewTask("email:send", []byte("1")), Queue("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Enqueue(ctx, NewTask("img.resize", []byte("2")), Queue("b")); err != nil {
		t.Fatal(err)
	}
	if _, err := openQueue(t, c, "b").Enqueue(ctx, []byte("peer\x00payload")); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"email email:send 1": true, "img 2": true, "default peer\x00payload": true}
	for range want {
		if v := recv(t, got); !want[v] {
			t.Errorf("ran %q", v)
		}
	}
	s.Shutdown(ctx)

	// No default: the unknown type is dead after one attempt, with the typed error's text.
	m2 := NewMux()
	m2.HandleFunc("email:", func(context.Context, *Task) ([]byte, error) { return nil, nil })
	start(t, c, m2, cfg)
	info, err := cl.Enqueue(ctx, NewTask("sms:send", nil), Queue("a"), Retention(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	_, err = cl.Wait(ctx, "a", info.ID)
	var je *JobError
	if !errors.As(err, &je) || je.Text != (&UnknownTypeError{Type: "sms:send"}).Error() {
		t.Fatalf("Wait: %v", err)
	}
	if r := row(t, openQueue(t, c, "a"), info.ID); r.State != emq.StateDead || r.Attempts != 1 {
		t.Fatalf("row %+v: want dead after 1 attempt", r)
	}
}

// TestServerRefusesMalformedEnvelope: a job whose payload opens with the
// envelope's magic but does not parse is never run: it goes to dead at
// once with the *EnvelopeError's text; the other jobs of the queue run.
func TestServerRefusesMalformedEnvelope(t *testing.T) {
	c := fresh(t)
	ctx := tctx(t)
	q := openQueue(t, c, "q")
	bad, _ := q.Enqueue(ctx, []byte("EMQ1 t=a b\nbody"))
	other, _ := q.Enqueue(ctx, []byte("EMQ7 t=a\n"))
	ran := make(chan string, 4)
	events := make(chan Event, 8)
	m := NewMux()
	m.HandleDefault(HandlerFunc(func(_ context.Context, t *Task) ([]byte, error) {
		ran <- t.ID
		return nil, nil
	}))
	s := start(t, c, m, ServerConfig{Queues: map[string]int{"q": 1}, Heartbeat: -1, OnEvent: func(e Event) { events <- e }})
	good, _ := NewClient(c, ClientConfig{}).Enqueue(ctx, NewTask("x", nil), Queue("q"))
	for range 3 {
		e := recv(t, events)
		switch e.Job.ID {
		case bad, other:
			if e.Kind != EventDead || !strings.HasPrefix(e.Err, "jobs: malformed envelope") {
				t.Fatalf("%s: %+v", e.Job.ID, e)
			}
		case good.ID:
			if e.Kind != EventCompleted {
				t.Fatalf("good: %+v", e)
			}
		}
	}
	s.Shutdown(ctx)
	if id := recv(t, ran); id != good.ID || len(ran) != 0 {
		t.Fatalf("ran %s (+%d)", id, len(ran))
	}
	for _, id := range []string{bad, other} {
		if r := row(t, q, id); r.State != emq.StateDead || r.Attempts != 1 || !strings.Contains(r.Error, "malformed envelope") {
			t.Fatalf("row %+v", r)
		}
	}
}
