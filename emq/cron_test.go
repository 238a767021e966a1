package emq

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCronFireCAS: a slot fires once — the same slot again, or an older
// one after a later one fired, answers already; a slot ahead of the
// server waits in delayed until its time; one too far ahead is refused
// with every later slot; a slot whose id names a row is taken without a
// job. The id is the slot's, whoever fires it.
func TestCronFireCAS(t *testing.T) {
	q := fresh(t, "cq")
	ctx := tctx(t)
	now := time.UnixMilli(serverMillis(t))
	s1, s2, s3 := now.Add(-3*time.Second), now.Add(-2*time.Second), now.Add(-time.Second)
	res, err := q.CronFire(ctx, "n", []byte("tick"), time.Minute, []time.Time{s1, s2})
	if err != nil || !res.Last.Equal(s2.Truncate(time.Millisecond)) || res.Fired[0] != CronPending || res.Fired[1] != CronPending {
		t.Fatalf("%+v %v", res, err)
	}
	id1, _ := CronID("n", s1)
	if res.IDs[0] != id1 || score(t, q.keys.Pending, id1) != "0" || row(t, q, id1)["payload"] != "tick" {
		t.Fatalf("slot 1's job %s: %v", res.IDs[0], row(t, q, id1))
	}
	res, err = q.CronFire(ctx, "n", []byte("tick"), time.Minute, []time.Time{s1, s2, s3})
	if err != nil || res.Fired[0] != CronAlready || res.Fired[1] != CronAlready || res.Fired[2] != CronPending {
		t.Fatalf("again: %+v %v", res, err)
	}
	if n := do(t, "ZCARD", q.keys.Pending); n != "3" {
		t.Fatalf("pending %s", n)
	}
	// Early (a clock ahead), and too far ahead.
	early, far := now.Add(30*time.Second), now.Add(10*time.Minute)
	res, err = q.CronFire(ctx, "n", nil, time.Minute, []time.Time{early, far, far.Add(time.Second)})
	if err != nil || res.Fired[0] != CronDelayed || res.Fired[1] != CronAhead || res.Fired[2] != CronAhead ||
		!res.Last.Equal(early.Truncate(time.Millisecond)) {
		t.Fatalf("ahead: %+v %v", res, err)
	}
	if got := scoreInt(t, q.keys.Delayed, res.IDs[0]); got != early.UnixMilli() {
		t.Fatalf("early slot due at %d, want %d", got, early.UnixMilli())
	}
	// The hash reset: the slot is taken again but its job exists.
	id3, _ := CronID("n", s3)
	do(t, "DEL", q.keys.Base+TypeCron)
	res, err = q.CronFire(ctx, "n", nil, time.Minute, []time.Time{s3})
	if err != nil || res.Fired[0] != CronExists || res.IDs[0] != id3 {
		t.Fatalf("reset: %+v %v", res, err)
	}
	if n := do(t, "ZCARD", q.keys.Pending); n != "3" {
		t.Fatalf("pending %s after the reset: a second job for a fired slot", n)
	}
	last, ok, err := q.CronLast(ctx, []string{"n", "other"})
	if err != nil || !ok[0] || ok[1] || !last[0].Equal(s3.Truncate(time.Millisecond)) {
		t.Fatalf("CronLast %v %v %v", last, ok, err)
	}
	// Interop: the core claim leases a cron job as any other.
	got := core(t, "claim", []string{q.keys.Pending, q.keys.Active, q.keys.Base}, "60000")
	if got != id1+"\ntick\n1" {
		t.Fatalf("core claim: %q", got)
	}
}

// TestCronFireBadInput: malformed arguments are EMQARG (or EMQKIND)
// before anything is written; host-side checks refuse before sending.
func TestCronFireBadInput(t *testing.T) {
	q := fresh(t, "cqb")
	keys := []string{q.keys.Pending, q.keys.Delayed, q.keys.Base}
	id, _ := CronID("n", time.Now())
	for _, args := range [][]string{
		{"n", "p", "1000", "1"},
		{"n", "p", "1000", "1", "5", id, "5", id},
		{"n", "p", "1000", "1", "6", id, "5", id},
		{"n", "p", "-1", "1", "5", id},
		{"n", "p", "1000", "1", "5.5", id},
		{"", "p", "1000", "1", "5", id},
		{"n", "p", "1000", "1", "5", "ABC" + id[3:]},
		{"n", "p", "1000", "2", "5", id, "ABC" + id[3:]},
		{"n", "p", "1000", "1", "5", id, "6"},
		{"n", "p", "1000", "2", "5", id},
		{"n", "p", "1000", "0", "5"},
		{"n", "p", "1000", "9", "5", id, id, id, id, id, id, id, id, id},
	} {
		cmd := append(append([]string{"EVAL", source("cron_fire"), "3"}, keys...), args...)
		_, err := srv.Do(cmd...)
		if err == nil || !(strings.Contains(err.Error(), "EMQARG") || strings.Contains(err.Error(), "EMQKIND")) {
			t.Fatalf("%v: %v", args, err)
		}
		if n := do(t, "DBSIZE"); n != "1" {
			t.Fatalf("%v: %s keys after a refused call", args, n)
		}
	}
	ctx := tctx(t)
	now := time.Now()
	for _, c := range []struct {
		name  string
		slots []time.Time
	}{
		{"", []time.Time{now}},
		{strings.Repeat("n", MaxCronName+1), []time.Time{now}},
		{"n", nil},
		{"n", []time.Time{now, now}},
		{"n", []time.Time{time.Unix(0, 0)}},
	} {
		if _, err := q.CronFire(ctx, c.name, nil, time.Minute, c.slots); !errors.Is(err, ErrArg) {
			t.Fatalf("%d-byte name, %d slots: %v", len(c.name), len(c.slots), err)
		}
	}
	if n := do(t, "DBSIZE"); n != "1" {
		t.Fatalf("%s keys", n)
	}
}

// TestCronID: the same name and slot give the same id; the id's time is
// the slot; other names give other ids.
func TestCronID(t *testing.T) {
	slot := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	a, err := CronID("daily", slot)
	b, _ := CronID("daily", slot)
	c, _ := CronID("hourly", slot)
	if err != nil || a != b || a == c || !ValidID(a) {
		t.Fatalf("%s %s %s %v", a, b, c, err)
	}
	_, sf, _ := ParseID(a)
	if !SnowflakeTime(sf).Equal(slot) {
		t.Fatalf("id time %v", SnowflakeTime(sf))
	}
	if n := strconv.Itoa(len(a)); n != strconv.Itoa(IDLen) {
		t.Fatal(n)
	}
}

// TestCronStart: the first origin given to a new schedule holds; a later
// one (another scheduler, another clock) reads it; a schedule that fired
// keeps its last slot.
func TestCronStart(t *testing.T) {
	q := fresh(t, "cqs")
	ctx := tctx(t)
	a := time.UnixMilli(serverMillis(t))
	if got, err := q.CronStart(ctx, "n", a); err != nil || !got.Equal(a) {
		t.Fatal(got, err)
	}
	if got, err := q.CronStart(ctx, "n", a.Add(time.Hour)); err != nil || !got.Equal(a) {
		t.Fatalf("second origin: %v %v", got, err)
	}
	res, err := q.CronFire(ctx, "n", nil, time.Minute, []time.Time{a, a.Add(time.Millisecond)})
	if err != nil || res.Fired[0] != CronAlready || res.Fired[1] != CronPending {
		t.Fatalf("fire after the origin: %+v %v", res, err)
	}
	if _, err := q.CronStart(ctx, "", a); !errors.Is(err, ErrArg) {
		t.Fatal(err)
	}
}

// TestCronFireCollision: two schedules of one queue whose first ids
// coincide (forced here) both fire every common slot: the second takes
// its next candidate; each is once per slot, fired again or after a
// reset of the cron hash.
func TestCronFireCollision(t *testing.T) {
	real := cronBits
	cronBits = func(name string, k int) uint32 {
		if k == 0 {
			return 12345 // every name's first id is the same
		}
		return real(name, k)
	}
	t.Cleanup(func() { cronBits = real })
	q := fresh(t, "cqc")
	ctx := tctx(t)
	now := time.UnixMilli(serverMillis(t))
	slots := []time.Time{now.Add(-2 * time.Second), now.Add(-time.Second)}
	a, _ := CronID("a", slots[0])
	if b, _ := CronID("b", slots[0]); a != b {
		t.Fatal("the hook did not force a collision")
	}
	ids := map[string]string{}
	for _, name := range []string{"a", "b", "a", "b"} {
		res, err := q.CronFire(ctx, name, []byte(name), time.Minute, slots)
		if err != nil {
			t.Fatal(err)
		}
		for i, f := range res.Fired {
			if ids[name+strconv.Itoa(i)] == "" {
				if f != CronPending || res.IDs[i] == "" {
					t.Fatalf("%s slot %d: %v %q, want a job (a collision missed the slot)", name, i, f, res.IDs[i])
				}
				ids[name+strconv.Itoa(i)] = res.IDs[i]
			} else if f != CronAlready {
				t.Fatalf("%s slot %d fired twice: %v", name, i, f)
			}
		}
	}
	if ids["a0"] == ids["b0"] || ids["a1"] == ids["b1"] {
		t.Fatalf("ids %v", ids)
	}
	if n := do(t, "ZCARD", q.keys.Pending); n != "4" {
		t.Fatalf("pending %s, want 4", n)
	}
	for k, id := range ids {
		if p := row(t, q, id)["payload"]; p != k[:1] {
			t.Fatalf("job %s of %s has payload %q", id, k, p)
		}
	}
	// A reset: each schedule finds its own job under its own candidate.
	do(t, "DEL", q.keys.Base+TypeCron)
	for _, name := range []string{"b", "a"} {
		res, err := q.CronFire(ctx, name, nil, time.Minute, slots)
		if err != nil {
			t.Fatal(err)
		}
		for i, f := range res.Fired {
			if f != CronExists || res.IDs[i] != ids[name+strconv.Itoa(i)] {
				t.Fatalf("after the reset %s slot %d: %v %q, want exists %q", name, i, f, res.IDs[i], ids[name+strconv.Itoa(i)])
			}
		}
	}
	if n := do(t, "ZCARD", q.keys.Pending); n != "4" {
		t.Fatalf("pending %s after the reset, want 4", n)
	}
}
