package jobs

import (
	"errors"
	"testing"
	"time"
)

// TestSpecErrors: a spec that never fires (Feb 30) is ErrNeverFires at
// registration; malformed specs, unknown zones, a zone in the spec and a
// too-short @every are ErrSpec; nothing is sent (no queue is needed to
// tell).
func TestSpecErrors(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	if _, err := parseSpec("0 0 30 2 *", "", now); !errors.Is(err, ErrNeverFires) || !errors.Is(err, ErrSpec) {
		t.Fatalf("Feb 30: %v", err)
	}
	for _, c := range []struct{ spec, tz string }{
		{"not a spec", ""},
		{"61 * * * *", ""},
		{"* * * * *", "Mars/Olympus"},
		{"TZ=UTC * * * * *", ""},
		{"CRON_TZ=Europe/Paris 0 0 * * *", ""},
		{"@every 0s", ""},
		{"@every 1us", ""},
		{"@every soon", ""},
		{"", ""},
	} {
		_, err := parseSpec(c.spec, c.tz, now)
		var se *SpecError
		if !errors.Is(err, ErrSpec) || errors.Is(err, ErrNeverFires) || !errors.As(err, &se) {
			t.Errorf("%q in %q: %v", c.spec, c.tz, err)
		}
	}
	sc := NewScheduler(SchedulerOptions{Now: func() time.Time { return now }})
	if err := sc.Register(Schedule{Name: "n", Spec: "0 0 30 2 *", Queue: nil}); !errors.Is(err, ErrScheduler) {
		t.Fatalf("no queue: %v", err)
	}
}

// TestSpecSlots: slots in a time zone, with seconds, descriptors and
// @every aligned to the epoch; dueSlots fires the latest due slot after
// the last, and up to CatchUp missed ones before it.
func TestSpecSlots(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Skip("no tzdata:", err)
	}
	now := time.Date(2026, 12, 1, 12, 30, 0, 0, time.UTC) // 13:30 in Paris
	s, err := parseSpec("0 9 * * *", "Europe/Paris", now)
	if err != nil {
		t.Fatal(err)
	}
	want := time.Date(2026, 12, 1, 9, 0, 0, 0, paris)
	if got := s.latest(now); !got.Equal(want) {
		t.Fatalf("latest %v, want %v", got, want)
	}
	if got := s.next(now); !got.Equal(want.AddDate(0, 0, 1)) {
		t.Fatalf("next %v", got)
	}
	if got := s.latest(want); !got.Equal(want) {
		t.Fatalf("latest at a slot %v", got)
	}
	sec, err := parseSpec("*/10 * * * * *", "", now)
	if err != nil || !sec.next(now).Equal(now.Add(10*time.Second)) {
		t.Fatalf("seconds: %v", err)
	}
	// Day of month or day of week, as in Vixie cron: the 1st, and Mondays.
	either, err := parseSpec("0 0 1 * MON", "", now) // Tue 1 Dec 2026, 12:30
	if err != nil {
		t.Fatal(err)
	}
	if got := either.next(now); !got.Equal(time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("dom or dow: next %v, want Monday the 7th", got)
	}
	if got := either.latest(now); !got.Equal(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("dom or dow: latest %v, want the 1st", got)
	}
	if _, err := parseSpec("@hourly", "", now); err != nil {
		t.Fatal(err)
	}
	ev, err := parseSpec("@every 250ms", "", now)
	if err != nil {
		t.Fatal(err)
	}
	at := now.Add(610 * time.Millisecond)
	if got := ev.latest(at); !got.Equal(now.Add(500 * time.Millisecond)) {
		t.Fatalf("every latest %v", got)
	}
	if got := ev.next(at); !got.Equal(now.Add(750 * time.Millisecond)) {
		t.Fatalf("every next %v", got)
	}

	last := now.Add(-time.Second) // 4 slots missed: -750, -500, -250, 0 ms, then 250 and 500
	if got := dueSlots(ev, last, at, 0); len(got) != 1 || !got[0].Equal(now.Add(500*time.Millisecond)) {
		t.Fatalf("skip: %v", got)
	}
	got := dueSlots(ev, last, at, 2)
	if len(got) != 3 || !got[0].Equal(now) || !got[2].Equal(now.Add(500*time.Millisecond)) {
		t.Fatalf("catch up 2: %v", got)
	}
	if got := dueSlots(ev, last, at, 100); len(got) != 6 || !got[0].Equal(now.Add(-750*time.Millisecond)) {
		t.Fatalf("catch up all: %v", got)
	}
	if got := dueSlots(ev, now.Add(500*time.Millisecond), at, 100); len(got) != 0 {
		t.Fatalf("nothing due: %v", got)
	}
	if got := dueSlots(s, want.AddDate(0, 0, -3), now, 5); len(got) != 3 {
		t.Fatalf("daily catch up: %v", got)
	}
}
