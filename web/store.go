package web

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/resp"
)

// RegistryKey is the sorted set of queue names a dashboard reads when
// Options.Registry is set: member the queue name, score the Unix ms of its
// last registration. Producers and consumers add to it with
// [RegisterQueues], outside any script: it is not a key of any queue's slot
// (it shares the hashtag of the wire fence, {emq}:version), so no
// transition ever touches it. The dashboard only reads it, one bounded
// ZRANGE.
const RegistryKey = "{emq}:queues"

// maxRegistry is the most queue names read from the registry.
const maxRegistry = 1000

// RegisterQueues adds the queues to [RegistryKey] (ZADD, score now), so a
// dashboard with Options.Registry finds them without a scan of the
// keyspace. Each name is checked with emq.ValidQueue first; nothing is
// sent when one is invalid.
func RegisterQueues(ctx context.Context, s conn.Sender, queues ...string) error {
	if len(queues) == 0 {
		return nil
	}
	args := []any{"ZADD", RegistryKey}
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	for _, q := range queues {
		if err := emq.ValidQueue(q); err != nil {
			return err
		}
		args = append(args, now, q)
	}
	_, err := s.Do(ctx, args...)
	return err
}

// store reads and changes the queues a dashboard shows: the queues opened
// once each, the counts cached briefly, the pages of the sets.
type store struct {
	s        conn.Sender
	static   []string
	registry bool
	ttl      time.Duration

	mu     sync.Mutex
	queues map[string]*queueEntry
	names  []string  // the last list of queues
	listed time.Time // when names was read
}

// queueEntry is one queue: its emq.Queue, opened once, and its cached
// stats. mu serializes refreshes so that viewers arriving together share
// one read.
type queueEntry struct {
	q    *emq.Queue
	keys emq.Keys

	mu   sync.Mutex
	st   emq.QueueStats
	err  error
	read time.Time
}

func newStore(s conn.Sender, static []string, registry bool, ttl time.Duration) *store {
	return &store{s: s, static: static, registry: registry, ttl: ttl, queues: map[string]*queueEntry{}}
}

// errUnknownQueue is a valid queue name the dashboard does not know.
var errUnknownQueue = errors.New("unknown queue")

// list returns the known queue names: Options.Queues, then the
// registry's, sorted, without duplicates; the registry read is cached for
// the stats TTL.
func (st *store) list(ctx context.Context) ([]string, error) {
	st.mu.Lock()
	if st.names != nil && time.Since(st.listed) < st.ttl {
		names := st.names
		st.mu.Unlock()
		return names, nil
	}
	st.mu.Unlock()
	seen := map[string]bool{}
	var names []string
	add := func(q string) {
		if !seen[q] && emq.ValidQueue(q) == nil {
			seen[q] = true
			names = append(names, q)
		}
	}
	for _, q := range st.static {
		add(q)
	}
	if st.registry {
		v, err := st.s.Do(ctx, "ZRANGE", RegistryKey, "0", strconv.Itoa(maxRegistry-1))
		if err != nil {
			return nil, fmt.Errorf("reading the queue registry %s: %w", RegistryKey, err)
		}
		for _, e := range v.Elems {
			add(string(e.Str))
		}
	}
	slices.Sort(names)
	st.mu.Lock()
	st.names, st.listed = names, time.Now()
	st.mu.Unlock()
	return names, nil
}

// queue returns the entry of a known queue: a 400-worthy *emq.QueueError
// for an invalid name, errUnknownQueue for one not listed.
func (st *store) queue(ctx context.Context, name string) (*queueEntry, error) {
	if err := emq.ValidQueue(name); err != nil {
		return nil, err
	}
	st.mu.Lock()
	e := st.queues[name]
	st.mu.Unlock()
	if e != nil {
		return e, nil
	}
	names, err := st.list(ctx)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(names, name) {
		return nil, errUnknownQueue
	}
	q, err := emq.OpenReadOnly(ctx, st.s, name)
	if err != nil {
		return nil, err
	}
	keys, _ := emq.NewKeys(name)
	st.mu.Lock()
	defer st.mu.Unlock()
	if e := st.queues[name]; e != nil {
		return e, nil
	}
	e = &queueEntry{q: q, keys: keys}
	st.queues[name] = e
	return e, nil
}

// stats returns the queue's stats, read at most once per TTL however
// many viewers ask (emq.Queue.Stats: one read-only script of ZCARDs, two
// ZCOUNTs and a ZRANGE 0 0, O(log N)).
func (e *queueEntry) stats(ctx context.Context, ttl time.Duration) (emq.QueueStats, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.read.IsZero() && time.Since(e.read) < ttl && e.err == nil {
		return e.st, nil
	}
	e.st, e.err = e.q.Stats(ctx)
	e.read = time.Now()
	return e.st, e.err
}

// invalidate drops the cached stats after an action.
func (e *queueEntry) invalidate() {
	e.mu.Lock()
	e.read = time.Time{}
	e.mu.Unlock()
}

// setKey is the key of the set of state s.
func (e *queueEntry) setKey(s emq.State) string {
	switch s {
	case emq.StatePending:
		return e.keys.Pending
	case emq.StateActive:
		return e.keys.Active
	case emq.StateDelayed:
		return e.keys.Delayed
	case emq.StateDead:
		return e.keys.Dead
	}
	return ""
}

// member is one entry of a set: an id and its score.
type member struct {
	ID    string
	Score int64
}

// cursor is a position in a set: the member (Score, ID) of the set's
// order, (score, then id bytes). Pending's scores are all 0, so there it
// is the id alone.
type cursor struct {
	Score int64
	ID    string
}

// String encodes c for a URL: "<score>.<id>".
func (c cursor) String() string { return strconv.FormatInt(c.Score, 10) + "." + c.ID }

// parseCursor reads a cursor; "" is none (ok false).
func parseCursor(s string) (c cursor, ok bool, err error) {
	if s == "" {
		return cursor{}, false, nil
	}
	sc, id, found := strings.Cut(s, ".")
	n, perr := strconv.ParseInt(sc, 10, 64)
	if !found || perr != nil || n < 0 || !emq.ValidID(id) {
		return cursor{}, false, fmt.Errorf("bad cursor %q: want <score>.<job id>", clip(s, 64))
	}
	return cursor{Score: n, ID: id}, true, nil
}

// tieSlack is how many members beyond a page a scored read fetches, so
// that members sharing the cursor's score (dropped as already shown) do
// not shorten the page.
const tieSlack = 8

// pageOf reads up to n members of key after (forward) or before
// (backward) the cursor, in the set's order, with one ZRANGE … LIMIT:
// BYLEX for pending (every score 0), else BYSCORE from the cursor's score
// with the members of that score at or beyond the cursor dropped. It is
// O(log N + n) whatever the position: never an offset into the set. more
// reports that members lie beyond the page in the direction read.
func pageOf(ctx context.Context, s conn.Sender, key string, lex bool, cur cursor, has, backward bool, upto int64, n int) (page []member, more bool, err error) {
	limit := n + 1
	var args []any
	if lex {
		// With REV the first bound is the greatest.
		near, far := "-", "+"
		if backward {
			near, far = "+", "-"
		}
		if has {
			near = "(" + cur.ID
		}
		args = []any{"ZRANGE", key, near, far, "BYLEX"}
	} else {
		if has {
			limit += tieSlack
		}
		near, far := "-inf", "+inf"
		if backward {
			near, far = "+inf", "-inf"
		} else if upto >= 0 {
			far = "(" + strconv.FormatInt(upto, 10)
		}
		if has {
			near = strconv.FormatInt(cur.Score, 10)
		}
		args = []any{"ZRANGE", key, near, far, "BYSCORE"}
	}
	if backward {
		args = append(args, "REV")
	}
	args = append(args, "LIMIT", "0", strconv.Itoa(limit))
	if !lex {
		args = append(args, "WITHSCORES")
	}
	v, err := s.Do(ctx, args...)
	if err != nil {
		return nil, false, err
	}
	got, err := parseMembers(v, !lex)
	if err != nil {
		return nil, false, err
	}
	fetched := len(got)
	if has && !lex {
		// Drop the members at the cursor's score already shown: those
		// at or before the cursor's id (forward), at or after (backward).
		i := 0
		for i < len(got) && got[i].Score == cur.Score && (!backward && got[i].ID <= cur.ID || backward && got[i].ID >= cur.ID) {
			i++
		}
		got = got[i:]
		if len(got) == 0 && fetched == limit {
			// More than the slack share the cursor's score: step past
			// them by rank (ZRANK, O(log N); a binary search among them
			// when the cursor left the set).
			return pageByRank(ctx, s, key, cur, backward, upto, n)
		}
	}
	if len(got) > n {
		return got[:n], true, nil
	}
	return got, fetched == limit, nil
}

// pageByRank reads the n members after (before) the cursor by rank: the
// rare page whose cursor's score is shared by more members than
// tieSlack. ZRANGE by index is O(log N + n) on a skiplist; a cursor no
// longer in the set costs a binary search among its score's members.
func pageByRank(ctx context.Context, s conn.Sender, key string, cur cursor, backward bool, upto int64, n int) ([]member, bool, error) {
	var b pipeline.Batch
	b.Add("ZSCORE", key, cur.ID)
	b.Add("ZRANK", key, cur.ID)
	if err := b.Exec(ctx, s); err != nil {
		return nil, false, err
	}
	sc, rk := b.Reply(0), b.Reply(1)
	f, ferr := sc.AsFloat()
	r, rerr := rk.AsInt()
	if sc.IsNull() || ferr != nil || rerr != nil || int64(f) != cur.Score {
		// The cursor left the set: find where it was among the members
		// of its score by a binary search of their ranks.
		var err error
		if r, err = tieRank(ctx, s, key, cur, backward); err != nil {
			return nil, false, err
		}
	}
	start, stop := r+1, r+int64(n)+1
	if backward {
		start, stop = max(r-int64(n)-1, 0), r-1
		if r == 0 {
			return nil, false, nil
		}
	}
	v, err := s.Do(ctx, "ZRANGE", key, strconv.FormatInt(start, 10), strconv.FormatInt(stop, 10), "WITHSCORES")
	if err != nil {
		return nil, false, err
	}
	got, err := parseMembers(v, true)
	if err != nil {
		return nil, false, err
	}
	if backward {
		slices.Reverse(got)
	}
	var kept []member
	for _, m := range got {
		if upto >= 0 && m.Score >= upto {
			break
		}
		kept = append(kept, m)
	}
	if len(kept) > n {
		return kept[:n], true, nil
	}
	return kept, false, nil
}

// tieRank returns the rank a cursor that left the set would have among
// the members of its score, r such that the members after it (forward)
// start at r+1, or those before it (backward) end at r-1: ZCOUNT bounds
// the ranks of the score's members, and a binary search over them (one
// ZRANGE of one member per step, O(log N) each) finds the id's place.
func tieRank(ctx context.Context, s conn.Sender, key string, cur cursor, backward bool) (int64, error) {
	sc := strconv.FormatInt(cur.Score, 10)
	var b pipeline.Batch
	b.Add("ZCOUNT", key, "-inf", "("+sc)
	b.Add("ZCOUNT", key, "-inf", sc)
	if err := b.Exec(ctx, s); err != nil {
		return 0, err
	}
	lo, err1 := b.Reply(0).AsInt()
	hi, err2 := b.Reply(1).AsInt()
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	// The first rank in [lo, hi) whose member is after the cursor's id.
	for lo < hi {
		mid := lo + (hi-lo)/2
		v, err := s.Do(ctx, "ZRANGE", key, strconv.FormatInt(mid, 10), strconv.FormatInt(mid, 10))
		if err != nil {
			return 0, err
		}
		if len(v.Elems) == 1 && string(v.Elems[0].Str) > cur.ID {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	// lo is the first member after the cursor: forward reads from lo
	// (r+1 = lo), backward reads up to lo-1 (r-1 = lo-1).
	if backward {
		return lo, nil
	}
	return lo - 1, nil
}

// parseMembers reads ZRANGE's reply, WITHSCORES (a flat list under RESP2,
// pairs under RESP3) or not.
func parseMembers(v resp.Value, scores bool) ([]member, error) {
	if err := v.Err(); err != nil {
		return nil, err
	}
	if v.Type != resp.Array {
		return nil, fmt.Errorf("ZRANGE: unexpected reply %s", v.Type)
	}
	var out []member
	if !scores {
		for _, e := range v.Elems {
			out = append(out, member{ID: string(e.Str)})
		}
		return out, nil
	}
	add := func(m, s resp.Value) error {
		f, err := s.AsFloat()
		if err != nil {
			return fmt.Errorf("ZRANGE: score %q: %w", s.Str, err)
		}
		out = append(out, member{ID: string(m.Str), Score: int64(f)})
		return nil
	}
	if len(v.Elems) > 0 && v.Elems[0].Type == resp.Array {
		for _, p := range v.Elems {
			if len(p.Elems) != 2 {
				return nil, errors.New("ZRANGE: want {member, score} pairs")
			}
			if err := add(p.Elems[0], p.Elems[1]); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	if len(v.Elems)%2 != 0 {
		return nil, errors.New("ZRANGE: want member, score pairs")
	}
	for i := 0; i < len(v.Elems); i += 2 {
		if err := add(v.Elems[i], v.Elems[i+1]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// jobRow is what a list shows of a job: its row without the payload,
// whose size alone is read (HSTRLEN).
type jobRow struct {
	member
	Exists      bool
	State       string
	Attempts    string
	Error       string
	PayloadSize int64
	Task        taskOf // from the payload's head (withTypes)
}

// rows reads each member's row: HMGET state attempts error and HSTRLEN
// payload, all in one pipeline; payloads are never loaded for a list.
func rows(ctx context.Context, s conn.Sender, keys emq.Keys, ms []member) ([]jobRow, error) {
	out := make([]jobRow, len(ms))
	if len(ms) == 0 {
		return out, nil
	}
	var b pipeline.Batch
	for _, m := range ms {
		k := keys.Job(m.ID)
		b.Add("HMGET", k, "state", "attempts", "error")
		b.Add("HSTRLEN", k, "payload")
	}
	if err := b.Exec(ctx, s); err != nil {
		return nil, err
	}
	for i, m := range ms {
		h, l := b.Reply(2*i), b.Reply(2*i+1)
		if err := h.Err(); err != nil {
			return nil, err
		}
		r := jobRow{member: m}
		if len(h.Elems) == 3 {
			r.State, r.Attempts, r.Error = string(h.Elems[0].Str), string(h.Elems[1].Str), string(h.Elems[2].Str)
			r.Exists = !h.Elems[0].IsNull() || !h.Elems[1].IsNull()
		}
		r.PayloadSize = l.Int
		out[i] = r
	}
	return out, nil
}

// jobDetail is everything the job page shows.
type jobDetail struct {
	ID       string
	Exists   bool              // the row exists
	Fields   map[string]string // the row's other fields
	State    string
	Attempts string
	Error    string
	Payload  []byte
	// In names the set holding the id ("" for none), Score its score.
	In    emq.State
	Score int64
	PTTL  int64 // the row's time to live, ms: -1 none, -2 no row
	Now   time.Time
}

// job reads one job: HGETALL of its row, ZSCORE in each set, PTTL and
// TIME, one pipeline; found is false when no set holds the id and it has
// no row.
func job(ctx context.Context, s conn.Sender, keys emq.Keys, id string) (d jobDetail, found bool, err error) {
	var b pipeline.Batch
	row := keys.Job(id)
	b.Add("HGETALL", row)
	sets := []emq.State{emq.StatePending, emq.StateActive, emq.StateDelayed, emq.StateDead}
	for _, st := range sets {
		b.Add("ZSCORE", setKeyOf(keys, st), id)
	}
	b.Add("PTTL", row)
	b.Add("TIME")
	if err := b.Exec(ctx, s); err != nil {
		return d, false, err
	}
	for i := range b.Len() {
		if err := b.Reply(i).Err(); err != nil {
			return d, false, err
		}
	}
	d.ID = id
	h := b.Reply(0)
	for i := 0; i+1 < len(h.Elems); i += 2 {
		f, v := string(h.Elems[i].Str), h.Elems[i+1].Str
		switch f {
		case "state":
			d.State = string(v)
		case "attempts":
			d.Attempts = string(v)
		case "error":
			d.Error = string(v)
		case "payload":
			d.Payload = append([]byte(nil), v...)
		default:
			if d.Fields == nil {
				d.Fields = map[string]string{}
			}
			d.Fields[f] = string(v)
		}
	}
	d.Exists = len(h.Elems) > 0
	for i, st := range sets {
		v := b.Reply(1 + i)
		if v.IsNull() {
			continue
		}
		f, err := v.AsFloat()
		if err == nil {
			d.In, d.Score = st, int64(f)
			break
		}
	}
	d.PTTL = b.Reply(5).Int
	if t := b.Reply(6); len(t.Elems) == 2 {
		sec, _ := t.Elems[0].AsInt()
		us, _ := t.Elems[1].AsInt()
		d.Now = time.Unix(sec, us*1000)
	}
	return d, d.Exists || d.In != "", nil
}

// payload reads a job's payload alone (HGET), for the raw download.
func payload(ctx context.Context, s conn.Sender, keys emq.Keys, id string) ([]byte, bool, error) {
	v, err := s.Do(ctx, "HGET", keys.Job(id), "payload")
	if err != nil {
		return nil, false, err
	}
	if v.IsNull() {
		return nil, false, nil
	}
	return append([]byte(nil), v.Str...), true, nil
}

func setKeyOf(k emq.Keys, s emq.State) string {
	e := queueEntry{keys: k}
	return e.setKey(s)
}

// deadScan is the most dead ids one filtered request examines.
const deadScan = 1000

// deadFilter selects dead jobs by error prefix and time of death,
// [since, before) in ms on the server's clock (-1: no bound).
type deadFilter struct {
	Prefix        string
	Since, Before int64
}

// scanDead examines at most deadScan dead ids from the cursor on (oldest
// death first) and returns up to n that match f, with the cursor of the
// last id examined when the scan stopped short of the end.
func scanDead(ctx context.Context, s conn.Sender, keys emq.Keys, f deadFilter, cur cursor, has bool, n int) (match []jobRow, next cursor, more bool, examined int, err error) {
	if !has && f.Since > 0 {
		cur, has = cursor{Score: f.Since - 1, ID: "~"}, true
	}
	for examined < deadScan && len(match) < n {
		chunk := min(deadScan-examined, 200)
		ms, m, err := pageOf(ctx, s, keys.Dead, false, cur, has, false, f.Before, chunk)
		if err != nil {
			return nil, cursor{}, false, examined, err
		}
		rs, err := rows(ctx, s, keys, ms)
		if err != nil {
			return nil, cursor{}, false, examined, err
		}
		for _, r := range rs {
			examined++
			cur, has = cursor{Score: r.Score, ID: r.ID}, true
			if strings.HasPrefix(r.Error, f.Prefix) {
				match = append(match, r)
				if len(match) == n {
					break
				}
			}
		}
		if len(match) == n {
			return match, cur, true, examined, nil
		}
		if !m {
			return match, cursor{}, false, examined, nil
		}
	}
	return match, cur, true, examined, nil
}

// clip shortens s to at most n bytes for a message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
