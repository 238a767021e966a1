package jobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echomq/echomq-go/emq"
)

// TestServerLanes: a Server (concurrency 8) over a LaneFlowQueues queue
// runs 4 lanes of cap 1, 15 jobs each, enqueued by the Client's
// EnqueueLane: no two jobs of a lane overlap and each lane's jobs start
// in enqueue order, while the lanes run beside each other (more than one
// handler at once). Without the hook, lane jobs are never claimed.
func TestServerLanes(t *testing.T) {
	c := fresh(t)
	ctx := tctx(t)
	const lanes, per = 4, 15
	var mu sync.Mutex
	busy := map[string]bool{}
	next := map[string]int{}
	at, most := 0, 0
	done := make(chan error, lanes*per)
	other := make(chan struct{}) // closed when a lane other than the first one's runs
	var otherOnce sync.Once
	first := ""
	m := NewMux()
	m.HandleFunc("l", func(ctx context.Context, t *Task) ([]byte, error) {
		lane, seq, _ := strings.Cut(string(t.Body), "/")
		mu.Lock()
		var err error
		if busy[lane] {
			err = fmt.Errorf("lane %s: two jobs at once", lane)
		} else if want := fmt.Sprint(next[lane]); seq != want {
			err = fmt.Errorf("lane %s: job %s started, want %s", lane, seq, want)
		}
		if first == "" {
			first = lane
		}
		wait := first == lane && seq == "0"
		busy[lane] = true
		next[lane]++
		at++
		most = max(most, at)
		f := first
		mu.Unlock()
		if lane != f {
			otherOnce.Do(func() { close(other) })
		} else if wait {
			select { // the first job runs until another lane's does
			case <-other:
			case <-ctx.Done():
			}
		}
		mu.Lock()
		busy[lane] = false
		at--
		mu.Unlock()
		done <- err
		return nil, nil
	})
	start(t, dial(t), m, ServerConfig{
		Queues: map[string]int{"lq": 1}, LaneFlowQueues: []string{"lq"}, Concurrency: 8, PollMax: 20 * time.Millisecond,
	})
	cl := newClient(t, c)
	for i := range per {
		for l := range lanes {
			if _, err := cl.EnqueueLane(ctx, fmt.Sprint("u", l), emq.LaneOptions{}, NewTask("l", fmt.Appendf(nil, "u%d/%d", l, i)), Queue("lq")); err != nil {
				t.Fatal(err)
			}
		}
	}
	for range lanes * per {
		if err := recv(t, done); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if most < 2 {
		t.Fatalf("at most %d handlers at once: the lanes did not run beside each other", most)
	}
}

// TestServerFlow: a diamond A → B, C → D submitted by the Client runs on
// a Server in dependency order, D's handler reading B's and C's results;
// a failing E ends dead and its FlowFail dependent F dead with the cause.
func TestServerFlow(t *testing.T) {
	c := fresh(t)
	ctx := tctx(t)
	q := openQueue(t, c, "fq")
	var mu sync.Mutex
	var order []string
	ran := make(chan string, 8)
	settled := make(chan EventKind, 8)
	var ids []string
	m := NewMux()
	m.HandleFunc("n", func(ctx context.Context, t *Task) ([]byte, error) {
		name := string(t.Body)
		mu.Lock()
		order = append(order, name)
		mu.Unlock()
		defer func() { ran <- name }()
		if name == "E" {
			return nil, errors.New("boom")
		}
		if name == "D" {
			mu.Lock()
			deps := ids[1:3]
			mu.Unlock()
			for _, id := range deps {
				v, err := q.Sender().Do(ctx, "GET", q.Keys().Base+"result:"+id)
				if err != nil || !strings.HasPrefix(string(v.Str), "r:") {
					return nil, fmt.Errorf("result of %s: %q %v", id, v.Str, err)
				}
			}
		}
		return []byte("r:" + name), nil
	})
	start(t, dial(t), m, ServerConfig{
		Queues: map[string]int{"fq": 1}, LaneFlowQueues: []string{"fq"}, Concurrency: 4, PollMax: 20 * time.Millisecond,
		OnEvent: func(e Event) { settled <- e.Kind },
	})
	cl := newClient(t, c)
	mu.Lock() // D reads ids
	f, got, err := cl.SubmitFlow(ctx, []FlowTask{
		{Task: NewTask("n", []byte("A"))},
		{Task: NewTask("n", []byte("B")), Deps: []emq.FlowDep{{Node: 0}}},
		{Task: NewTask("n", []byte("C")), Deps: []emq.FlowDep{{Node: 0}}},
		{Task: NewTask("n", []byte("D")), Deps: []emq.FlowDep{{Node: 1}, {Node: 2}}},
		{Task: NewTask("n", []byte("E"))},
		{Task: NewTask("n", []byte("F")), Deps: []emq.FlowDep{{Node: 4}}},
	}, Queue("fq"), MaxRetries(0))
	ids = got
	mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	for range 5 { // A, B, C, D completed, E dead: F never runs
		recv(t, ran)
		if k := recv(t, settled); k != EventCompleted && k != EventDead {
			t.Fatalf("event %v", k)
		}
	}
	fi, err := q.Flow(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	if fi.State != emq.FlowFailed || fi.Jobs[3].State != emq.StateCompleted || fi.Jobs[5].State != emq.StateDead {
		t.Fatalf("flow %+v", fi)
	}
	mu.Lock()
	defer mu.Unlock()
	pos := map[string]int{}
	for i, n := range order {
		pos[n] = i
	}
	if _, ok := pos["F"]; ok || pos["D"] < pos["B"] || pos["D"] < pos["C"] || pos["B"] < pos["A"] || pos["C"] < pos["A"] {
		t.Fatalf("order %v", order)
	}
}

// TestServerFlowLane: a flow's tasks naming a lane (FlowTask.Lane) run in
// it under a Server with 4 handlers: B1..B4 (lane "u", each depending on
// A) start after A, one at a time, in their release order; C, depending
// on all four, starts after each of them ended.
func TestServerFlowLane(t *testing.T) {
	c := fresh(t)
	ctx := tctx(t)
	q := openQueue(t, c, "flq")
	var mu sync.Mutex
	var events []string // "+name" at a start, "-name" at an end
	ran := make(chan string, 8)
	settled := make(chan EventKind, 8)
	m := NewMux()
	m.HandleFunc("n", func(ctx context.Context, t *Task) ([]byte, error) {
		name := string(t.Body)
		mu.Lock()
		events = append(events, "+"+name)
		mu.Unlock()
		defer func() {
			mu.Lock()
			events = append(events, "-"+name)
			mu.Unlock()
			ran <- name
		}()
		return nil, nil
	})
	start(t, dial(t), m, ServerConfig{
		Queues: map[string]int{"flq": 1}, LaneFlowQueues: []string{"flq"}, Concurrency: 4, PollMax: 20 * time.Millisecond,
		OnEvent: func(e Event) { settled <- e.Kind },
	})
	cl := newClient(t, c)
	tasks := []FlowTask{{Task: NewTask("n", []byte("A"))}}
	var all []emq.FlowDep
	for i := 1; i <= 4; i++ {
		tasks = append(tasks, FlowTask{Task: NewTask("n", []byte("B"+strconv.Itoa(i))), Deps: []emq.FlowDep{{Node: 0}}, Lane: "u"})
		all = append(all, emq.FlowDep{Node: i})
	}
	tasks = append(tasks, FlowTask{Task: NewTask("n", []byte("C")), Deps: all})
	f, _, err := cl.SubmitFlow(ctx, tasks, Queue("flq"))
	if err != nil {
		t.Fatal(err)
	}
	for range 6 {
		recv(t, ran)
		if k := recv(t, settled); k != EventCompleted {
			t.Fatalf("event %v", k)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"+A", "-A", "+B1", "-B1", "+B2", "-B2", "+B3", "-B3", "+B4", "-B4", "+C", "-C"}
	if !slices.Equal(events, want) {
		t.Fatalf("events %v, want %v", events, want)
	}
	fi, err := q.Flow(ctx, f)
	if err != nil || fi.State != emq.FlowDone {
		t.Fatalf("flow %+v %v", fi, err)
	}
}

// TestServerFlowQueues: a queue of ServerConfig.FlowQueues runs a flow
// (a chain A→B→C→D, then E and F on D) in dependency order, and each of
// its rounds is one server call (FlowCompleteClaim settles and claims);
// the same flow under LaneFlowQueues takes two calls in a round that
// settles a completion and claims (FlowCompleteBatch, then LaneClaim).
func TestServerFlowQueues(t *testing.T) {
	for _, flowOnly := range []bool{true, false} {
		t.Run(fmt.Sprint("flowOnly=", flowOnly), func(t *testing.T) {
			c := fresh(t)
			ctx := tctx(t)
			q := openQueue(t, c, "fo")
			ran := make(chan string, 8)
			done := make(chan struct{}, 8)
			m := NewMux()
			m.HandleFunc("n", func(ctx context.Context, t *Task) ([]byte, error) {
				ran <- string(t.Body)
				return nil, nil
			})
			cfg := ServerConfig{
				Queues: map[string]int{"fo": 1}, Concurrency: 1, PollMax: 20 * time.Millisecond,
				OnEvent: func(e Event) {
					if e.Kind == EventCompleted {
						done <- struct{}{}
					}
				},
			}
			if flowOnly {
				cfg.FlowQueues = []string{"fo"}
			} else {
				cfg.LaneFlowQueues = []string{"fo"}
			}
			s := start(t, dial(t), m, cfg)
			f, _, err := newClient(t, c).SubmitFlow(ctx, []FlowTask{
				{Task: NewTask("n", []byte("A"))},
				{Task: NewTask("n", []byte("B")), Deps: []emq.FlowDep{{Node: 0}}},
				{Task: NewTask("n", []byte("C")), Deps: []emq.FlowDep{{Node: 1}}},
				{Task: NewTask("n", []byte("D")), Deps: []emq.FlowDep{{Node: 2}}},
				{Task: NewTask("n", []byte("E")), Deps: []emq.FlowDep{{Node: 3}}},
				{Task: NewTask("n", []byte("F")), Deps: []emq.FlowDep{{Node: 3}}},
			}, Queue("fo"))
			if err != nil {
				t.Fatal(err)
			}
			var order []string
			for range 6 {
				order = append(order, recv(t, ran))
				recv(t, done)
			}
			if got := strings.Join(order[:4], ""); got != "ABCD" {
				t.Fatalf("order %v", order)
			}
			fi, err := q.Flow(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			if fi.State != emq.FlowDone {
				t.Fatalf("flow %+v", fi)
			}
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if err := s.Shutdown(sctx); err != nil {
				t.Fatal(err)
			}
			st := s.Stats()
			t.Logf("%+v", st)
			if flowOnly && st.Calls != st.Rounds {
				t.Fatalf("FlowQueues: %d calls in %d rounds, want one a round", st.Calls, st.Rounds)
			}
			if !flowOnly && st.Calls <= st.Rounds {
				t.Fatalf("LaneFlowQueues: %d calls in %d rounds, want more than one in a settling round", st.Calls, st.Rounds)
			}
		})
	}
}
