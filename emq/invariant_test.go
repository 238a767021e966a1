package emq

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/echomq/echomq-go/pipeline"
)

// snapshot is the queue's state read back with plain commands.
type snapshot struct {
	set      map[string]State // the set holding each id
	pending  []string         // pending in claim order
	rowState map[string]string
	attempts map[string]int64
	errText  map[string]string // the row's error field
	deadAt   map[string]int64  // each dead id's time of death
}

// model drives a random sequence of verbs and checks, after every step,
// the protocol's invariant and what each verb must have done.
type model struct {
	t       *testing.T
	q       *Queue
	rng     *rand.Rand
	known   map[string]bool // every id ever enqueued; true once seen finished
	tokens  map[string]int64
	snap    snapshot
	paused  bool
	revived string // an id whose deleted row the last step re-created
	reads   int    // rows read, for the log
	seen    map[string]int
}

func TestRandomSequenceInvariant(t *testing.T) {
	q := fresh(t, "model")
	steps := 2000
	if testing.Short() {
		steps = 300
	}
	m := &model{
		t: t, q: q, rng: rand.New(rand.NewPCG(20240101, 6)),
		known: map[string]bool{}, tokens: map[string]int64{}, seen: map[string]int{},
	}
	m.read()
	for i := range steps {
		m.revived = ""
		m.step(i)
		before := m.snap
		m.read()
		m.checkInvariant(i, before)
	}
	t.Logf("%d steps, %d ids, %.1f rows read per step, %d left in sets; outcomes %v", steps, len(m.known),
		float64(m.reads)/float64(steps), len(m.snap.set), m.seen)
	if testing.Short() {
		return // too few steps to see every outcome every time
	}
	for _, o := range []string{"complete", "complete stale", "retry dead", "retry requeued", "retry delayed",
		"retry stale", "reaped", "promoted", "revived", "duplicate", "extend", "extend stale", "claim empty",
		"requeued", "requeue not dead", "requeued by filter", "deleted", "delete not found", "trimmed", "stats",
		"settle completed", "settle requeued", "settle delayed", "settle dead", "settle released", "settle stale",
		"settle claimed"} {
		if m.seen[o] == 0 {
			t.Errorf("the sequence never saw %q", o)
		}
	}
}

// read takes a snapshot in one pipeline: the four sets, and state and
// attempts of every known id not yet seen finished (a superset of the
// sets' members: a finished id comes back only through EnqueueID, which
// marks it unfinished) and of a sample of the finished ones.
func (m *model) read() {
	t, q := m.t, m.q
	var b pipeline.Batch
	states := []State{StatePending, StateActive, StateDelayed, StateDead}
	for _, s := range states {
		key, _ := q.setKey(s)
		b.Add("ZRANGE", key, "0", "-1", "WITHSCORES")
	}
	ids := make([]string, 0, len(m.known))
	for id := range m.known {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	n := 0
	for _, id := range ids {
		if !m.known[id] || m.rng.IntN(50) == 0 {
			ids[n] = id
			n++
		}
	}
	ids = ids[:n]
	for _, id := range ids {
		b.Add("HMGET", q.keys.Job(id), "state", "attempts", "error")
	}
	if err := b.Exec(tctx(t), q.sender); err != nil {
		t.Fatal(err)
	}
	snap := snapshot{set: map[string]State{}, rowState: map[string]string{}, attempts: map[string]int64{},
		errText: map[string]string{}, deadAt: map[string]int64{}}
	for i, id := range ids {
		r := b.Reply(len(states) + i).Elems
		snap.rowState[id] = string(r[0].Str)
		if !r[1].IsNull() {
			snap.attempts[id], _ = strconv.ParseInt(string(r[1].Str), 10, 64)
		}
		snap.errText[id] = string(r[2].Str)
	}
	for i, s := range states {
		scored, err := parseScored(b.Reply(i))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range scored {
			id := e.ID
			if prev, dup := snap.set[id]; dup {
				t.Fatalf("%s is in both %s and %s", id, prev, s)
			}
			if _, read := snap.rowState[id]; !read {
				t.Fatalf("%s is in %s but is unknown or was seen finished", id, s)
			}
			snap.set[id] = s
			switch s {
			case StatePending:
				snap.pending = append(snap.pending, id)
			case StateDead:
				snap.deadAt[id] = e.Score
			}
		}
	}
	m.snap = snap
	m.reads += len(ids)
	// Forget most stale tokens, so that most acks are meant to hold.
	held := make([]string, 0, len(m.tokens))
	for id := range m.tokens {
		held = append(held, id)
	}
	slices.Sort(held)
	for _, id := range held {
		if !m.holds(id, m.tokens[id]) && m.rng.IntN(4) != 0 {
			delete(m.tokens, id)
		}
	}
}

// checkInvariant: every known id is in exactly one set with a row whose
// state names that set, or in none with its row completed or deleted.
func (m *model) checkInvariant(step int, before snapshot) {
	for id, st := range m.snap.rowState {
		set, in := m.snap.set[id]
		switch {
		case in && st != string(set):
			m.t.Fatalf("step %d: %s in %s, row state %q", step, id, set, st)
		case !in && st != "" && st != string(StateCompleted):
			m.t.Fatalf("step %d: %s in no set, row state %q", step, id, st)
		case !in:
			m.known[id] = true
		}
	}
	for id, a := range m.snap.attempts {
		if b, ok := before.attempts[id]; ok && a < b && id != m.revived {
			m.t.Fatalf("step %d: %s attempts went back from %d to %d", step, id, b, a)
		}
	}
}

// held returns a random id the model holds a token for, or "".
func (m *model) held() string {
	if len(m.tokens) == 0 {
		return ""
	}
	ids := make([]string, 0, len(m.tokens))
	for id := range m.tokens {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids[m.rng.IntN(len(ids))]
}

// holds reports whether token holds id's lease in the current snapshot.
func (m *model) holds(id string, token int64) bool {
	return m.snap.set[id] == StateActive && m.snap.attempts[id] == token
}

func (m *model) claimed(jobs []Job) { m.claimedFrom(jobs, m.snap.pending) }

// claimedFrom checks jobs claimed from pending (in claim order): the
// oldest first, each token one more than the attempts read before.
func (m *model) claimedFrom(jobs []Job, pending []string) {
	for _, j := range jobs {
		if want := m.snap.attempts[j.ID] + 1; j.Token != want {
			m.t.Fatalf("claimed %s with token %d, want %d", j.ID, j.Token, want)
		}
		m.tokens[j.ID] = j.Token
	}
	want := pending[:min(len(jobs), len(pending))]
	if m.paused {
		want = nil
	}
	got := make([]string, len(jobs))
	for i, j := range jobs {
		got[i] = j.ID
	}
	if !slices.Equal(got, want) && !(len(want) == 0 && len(got) == 0) {
		m.t.Fatalf("claimed %v, want the oldest pending %v", got, want)
	}
}

func (m *model) step(i int) {
	t, q, r := m.t, m.q, m.rng
	ctx := tctx(t)
	lease := time.Duration(5+r.IntN(60)) * time.Millisecond
	switch x := r.IntN(110); {
	case x < 12:
		id, err := q.Enqueue(ctx, []byte(strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		m.known[id] = false
	case x < 15:
		id, err := q.EnqueueIn(ctx, time.Duration(r.IntN(30))*time.Millisecond, nil)
		if err != nil {
			t.Fatal(err)
		}
		m.known[id] = false
	case x < 18:
		enqueue := q.EnqueueBatch
		if r.IntN(2) == 0 {
			enqueue = q.EnqueueBulk
		}
		res, err := enqueue(ctx, make([][]byte, 1+r.IntN(3)))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range res {
			if e.Err != nil {
				t.Fatal(e.Err)
			}
			m.known[e.ID] = false
		}
	case x < 21 && len(m.snap.rowState) > 0:
		// Re-enqueue an id whose row was read: a duplicate unless the row
		// is gone (completed with retention 0), when the id comes back.
		ids := make([]string, 0, len(m.snap.rowState))
		for id := range m.snap.rowState {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		if r.IntN(2) == 0 { // prefer a deleted row: it comes back
			gone := slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return m.snap.rowState[id] != "" })
			if len(gone) > 0 {
				ids = gone
			}
		}
		id := ids[r.IntN(len(ids))]
		exists := m.snap.rowState[id] != ""
		ok, err := q.EnqueueID(ctx, id, nil)
		if err != nil || ok == exists {
			t.Fatalf("EnqueueID(%s) = %v, %v; row state %q", id, ok, err, m.snap.rowState[id])
		}
		if ok {
			m.known[id] = false
			m.revived = id
			m.seen["revived"]++
		} else {
			m.seen["duplicate"]++
		}
	case x < 36:
		job, ok, err := q.Claim(ctx, lease)
		if err != nil {
			t.Fatal(err)
		}
		var jobs []Job
		if ok {
			jobs = append(jobs, job)
		} else {
			m.seen["claim empty"]++
		}
		m.claimed(jobs)
	case x < 46:
		jobs, err := q.ClaimBatch(ctx, lease, 1+r.IntN(4))
		if err != nil {
			t.Fatal(err)
		}
		m.claimed(jobs)
	case x < 58:
		id := m.held()
		if id == "" {
			return
		}
		token := m.tokens[id]
		if r.IntN(10) == 0 {
			token++
		}
		err := q.Complete(ctx, id, token, time.Duration(r.IntN(2))*time.Minute)
		if want := m.holds(id, token); (err == nil) != want || (err != nil && !errors.Is(err, ErrStale)) {
			t.Fatalf("Complete(%s, %d) = %v, holds %v", id, token, err, want)
		}
		if err != nil {
			m.seen["complete stale"]++
		} else {
			m.seen["complete"]++
		}
		delete(m.tokens, id)
	case x < 66:
		m.settleClaim(i, lease)
	case x < 76:
		id := m.held()
		if id == "" {
			return
		}
		token, maxAtt := m.tokens[id], 1+r.IntN(4)
		if r.IntN(10) == 0 {
			token--
		}
		delay := time.Duration(r.IntN(2)*r.IntN(30)) * time.Millisecond
		out, err := q.Retry(ctx, id, token, delay, maxAtt, "failed at step "+strconv.Itoa(i))
		holds := m.holds(id, token)
		switch {
		case !holds && !errors.Is(err, ErrStale):
			t.Fatalf("stale Retry(%s) = %v, %v", id, out, err)
		case holds && err != nil:
			t.Fatalf("Retry(%s) = %v", id, err)
		case holds && token >= int64(maxAtt) && out != RetryDead:
			t.Fatalf("Retry(%s) attempts %d max %d = %v", id, token, maxAtt, out)
		case holds && token < int64(maxAtt) && (out == RetryDead || (out == RetryDelayed) != (delay > 0)):
			t.Fatalf("Retry(%s) attempts %d max %d delay %v = %v", id, token, maxAtt, delay, out)
		}
		if err != nil {
			m.seen["retry stale"]++
		} else {
			m.seen["retry "+out.String()]++
		}
		delete(m.tokens, id)
	case x < 81:
		id := m.held()
		if id == "" {
			return
		}
		token := m.tokens[id]
		if r.IntN(10) == 0 {
			token += 2
		}
		err := q.Extend(ctx, id, token, lease)
		if want := m.holds(id, token); (err == nil) != want || (err != nil && !errors.Is(err, ErrStale)) {
			t.Fatalf("Extend(%s) = %v, holds %v", id, err, want)
		}
		if err != nil {
			m.seen["extend stale"]++
		} else {
			m.seen["extend"]++
		}
	case x < 87:
		n, err := q.Promote(ctx, 1+r.IntN(5))
		if err != nil {
			t.Fatal(err)
		}
		m.seen["promoted"] += n
	case x < 97:
		n, err := q.Reap(ctx, 1+r.IntN(5), 1+r.IntN(4))
		if err != nil {
			t.Fatal(err)
		}
		m.seen["reaped"] += n
	case x < 100:
		var err error
		if m.paused {
			err = q.Resume(ctx)
		} else {
			err = q.Pause(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		m.paused = !m.paused
	default:
		m.operate(x - 100)
	}
}

// settleClaim settles a few held jobs (some tokens stale, one id now and
// then completed twice) and claims a few, in one settle_claim, and checks
// every result against the snapshot: what each outcome must have done,
// and that the claim took the oldest pending after the settlements.
func (m *model) settleClaim(step int, lease time.Duration) {
	t, q, r := m.t, m.q, m.rng
	held := make([]string, 0, len(m.tokens))
	for id := range m.tokens {
		held = append(held, id)
	}
	slices.Sort(held)
	r.Shuffle(len(held), func(i, j int) { held[i], held[j] = held[j], held[i] })
	held = held[:min(len(held), r.IntN(5))]
	var outcomes []Outcome
	for _, id := range held {
		c := Outcome{Kind: OutcomeKind(1 + r.IntN(3)), ID: id, Token: m.tokens[id]}
		if r.IntN(8) == 0 {
			c.Token += int64(1 + r.IntN(2))
		}
		if c.Kind == OutcomeRetry {
			c.MaxAttempts = 1 + r.IntN(4)
			c.Delay = time.Duration(r.IntN(2)*r.IntN(30)) * time.Millisecond
			c.Error = "failed at step " + strconv.Itoa(step)
		}
		outcomes = append(outcomes, c)
	}
	twice := ""
	if len(outcomes) > 0 && outcomes[0].Kind == OutcomeComplete && r.IntN(4) == 0 {
		twice = outcomes[0].ID
		outcomes = append(outcomes, outcomes[0])
	}
	n := r.IntN(4)
	settled, jobs, err := q.SettleClaim(tctx(t), outcomes, time.Duration(r.IntN(2))*time.Minute, lease, n)
	if err != nil {
		t.Fatal(err)
	}
	pending := slices.Clone(m.snap.pending)
	for i, c := range outcomes {
		want := SettledStale
		holds := m.holds(c.ID, c.Token) && !(c.ID == twice && i > 0)
		switch {
		case !holds:
		case c.Kind == OutcomeComplete:
			want = SettledCompleted
		case c.Kind == OutcomeRelease:
			want = SettledReleased
			pending = append(pending, c.ID)
		case c.Token >= int64(c.MaxAttempts):
			want = SettledDead
		case c.Delay > 0:
			want = SettledDelayed
		default:
			want = SettledRequeued
			pending = append(pending, c.ID)
		}
		if settled[i] != want {
			t.Fatalf("settle_claim %v: outcome %d (%+v) settled %v, want %v", outcomes, i, c, settled[i], want)
		}
		m.seen["settle "+settled[i].String()]++
		delete(m.tokens, c.ID)
	}
	slices.Sort(pending) // score 0: byte order
	if n == 0 {
		pending = nil
	}
	m.claimedFrom(jobs, pending)
	if n > 0 && len(jobs) < min(n, len(pending)) && !m.paused {
		t.Fatalf("settle_claim claimed %d of %d asked, with %d pending", len(jobs), n, len(pending))
	}
	if len(jobs) > n {
		t.Fatalf("settle_claim claimed %d, asked for %d", len(jobs), n)
	}
	m.seen["settle claimed"] += len(jobs)
}
