package emq

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ids returns the ids of the snapshot's rows, sorted, that pass keep.
func (m *model) ids(keep func(id string) bool) []string {
	var out []string
	for id := range m.snap.rowState {
		if keep(id) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// dead returns the snapshot's dead ids in the dead set's order.
func (m *model) dead() []string {
	ids := m.ids(func(id string) bool { return m.snap.set[id] == StateDead })
	slices.SortFunc(ids, func(a, b string) int {
		if c := m.snap.deadAt[a] - m.snap.deadAt[b]; c != 0 {
			return int(c)
		}
		return strings.Compare(a, b)
	})
	return ids
}

// operate runs one operation (x in [0, 10)) and checks its answer
// against the snapshot taken before it; the invariant is checked after.
func (m *model) operate(x int) {
	t, q, r := m.t, m.q, m.rng
	ctx := tctx(t)
	switch {
	case x < 3: // requeue one id, dead or not, or a batch
		ids := m.ids(func(string) bool { return true })
		if len(ids) == 0 {
			return
		}
		if dead := m.dead(); len(dead) > 0 && r.IntN(2) == 0 {
			ids = dead
		}
		pick := []string{ids[r.IntN(len(ids))], ids[r.IntN(len(ids))]}
		if r.IntN(2) == 0 {
			pick = pick[:1]
		}
		done, err := q.RequeueBatch(ctx, pick)
		if err != nil {
			t.Fatal(err)
		}
		for i, id := range pick {
			want := m.snap.set[id] == StateDead && !slices.Contains(pick[:i], id)
			if done[i] != want {
				t.Fatalf("RequeueBatch %v = %v; %s was in %q", pick, done, id, m.snap.set[id])
			}
			if want {
				m.seen["requeued"]++
			} else {
				m.seen["requeue not dead"]++
			}
		}
	case x < 5: // requeue by filter: an error prefix, a time window, a limit
		f := DeadFilter{ErrorPrefix: "failed at step " + strconv.Itoa(1+r.IntN(9)), Limit: r.IntN(3)}
		dead := m.dead()
		if len(dead) > 0 && r.IntN(2) == 0 {
			f.ErrorPrefix = ""
			f.Since = time.UnixMilli(m.snap.deadAt[dead[r.IntN(len(dead))]])
			f.Before = f.Since.Add(time.Duration(r.IntN(20)) * time.Millisecond)
		}
		want := 0
		for _, id := range dead {
			at := time.UnixMilli(m.snap.deadAt[id])
			if strings.HasPrefix(m.snap.errText[id], f.ErrorPrefix) &&
				(f.Since.IsZero() || !at.Before(f.Since)) && (f.Before.IsZero() || at.Before(f.Before)) {
				want++
			}
		}
		if f.Limit > 0 {
			want = min(want, f.Limit)
		}
		n, err := q.RequeueDead(ctx, f)
		if err != nil || n != want {
			t.Fatalf("RequeueDead(%+v) = %d, %v; want %d", f, n, err, want)
		}
		m.seen["requeued by filter"] += n
	case x < 7: // delete a job in whatever state, or none
		ids := m.ids(func(string) bool { return true })
		if len(ids) == 0 {
			return
		}
		if r.IntN(3) == 0 { // prefer a job already gone: not found
			gone := m.ids(func(id string) bool { return m.snap.rowState[id] == "" })
			if len(gone) > 0 {
				ids = gone
			}
		}
		id := ids[r.IntN(len(ids))]
		want := m.snap.set[id]
		if want == "" {
			want = State(m.snap.rowState[id])
		}
		was, err := q.Delete(ctx, id)
		switch {
		case want == "" && !errors.Is(err, ErrNotFound), want != "" && (err != nil || was != want):
			t.Fatalf("Delete(%s) = %q, %v; want %q", id, was, err, want)
		case want == "":
			m.seen["delete not found"]++
		default:
			m.seen["deleted"]++
		}
		delete(m.tokens, id)
	case x < 9: // trim the dead set by count, or all of it by age
		dead := len(m.dead())
		maxAge, keep := time.Duration(-1), r.IntN(3)
		if r.IntN(4) == 0 {
			maxAge, keep = 0, -1
		}
		want := dead
		if keep >= 0 {
			want = max(dead-keep, 0)
		}
		n, err := q.TrimDead(ctx, maxAge, keep)
		if err != nil || n != want {
			t.Fatalf("TrimDead(%v, %d) = %d, %v; want %d of %d", maxAge, keep, n, err, want, dead)
		}
		m.seen["trimmed"] += n
	default: // stats agree with the snapshot
		st, err := q.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		count := map[State]int64{}
		for _, s := range m.snap.set {
			count[s]++
		}
		oldest := ""
		if len(m.snap.pending) > 0 {
			oldest = m.snap.pending[0]
		}
		got := [4]int64{st.Pending, st.Active, st.Delayed, st.Dead}
		want := [4]int64{count[StatePending], count[StateActive], count[StateDelayed], count[StateDead]}
		if got != want || st.Oldest != oldest || st.Paused != m.paused || st.Due > st.Delayed || st.Expired > st.Active {
			t.Fatalf("Stats = %+v; the snapshot has %v, oldest %q, paused %v", st, want, oldest, m.paused)
		}
		m.seen["stats"]++
	}
}
