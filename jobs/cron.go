package jobs

import (
	"errors"
	"strings"
	"time"

	cron "github.com/netresearch/go-cron"
)

// The cron expressions a [Schedule] takes are parsed by
// github.com/netresearch/go-cron, the maintained fork of robfig/cron
// (MIT, no dependencies; robfig/cron has had no release since 2020 and
// panics on malformed TZ= input, robfig/cron#554 and #555, which the fork
// refuses with an error). Slots are computed here from its Next and Prev,
// except @every, whose slots are aligned to the Unix epoch (multiples of
// the interval) so that every scheduler, whenever it started, has the
// same slots, and whose interval may be under a second.

// ErrSpec matches every error about a schedule's spec, a *[SpecError].
var ErrSpec = errors.New("jobs: invalid schedule spec")

// ErrNeverFires matches the *[SpecError] of a spec that parses but has no
// slot (Feb 30: "0 0 30 2 *").
var ErrNeverFires = errors.New("jobs: the schedule never fires")

// SpecError says why a schedule's spec or time zone was refused.
type SpecError struct {
	Spec   string
	TZ     string
	Reason string
	never  bool
}

// Error names the spec and the problem.
func (e *SpecError) Error() string {
	s := "jobs: schedule spec " + quoteSpec(e.Spec)
	if e.TZ != "" {
		s += " in " + e.TZ
	}
	return s + ": " + e.Reason
}

// Is matches [ErrSpec], and [ErrNeverFires] for a spec with no slot.
func (e *SpecError) Is(target error) bool {
	return target == ErrSpec || (e.never && target == ErrNeverFires)
}

func quoteSpec(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return `"` + s + `"`
}

// slots is a parsed spec: its slot times.
type slots interface {
	// latest returns the latest slot at or before t; zero if none.
	latest(t time.Time) time.Time
	// next returns the first slot after t; zero if none.
	next(t time.Time) time.Time
}

// every is "@every d": the multiples of d since the Unix epoch.
type every time.Duration

func (e every) latest(t time.Time) time.Time {
	d := int64(e)
	n := t.UnixNano()
	return time.Unix(0, n-((n%d)+d)%d)
}

func (e every) next(t time.Time) time.Time { return e.latest(t).Add(time.Duration(e)) }

// spec is a cron expression.
type spec struct{ s cron.ScheduleWithPrev }

func (c spec) latest(t time.Time) time.Time {
	return c.s.Prev(t.Truncate(time.Second).Add(time.Second))
}

func (c spec) next(t time.Time) time.Time { return c.s.Next(t) }

// parser takes the standard five fields (minute, hour, day of month,
// month, day of week, a day matching either of its two fields as in
// Vixie cron), an optional leading seconds field, and the descriptors
// (@yearly, @monthly, @weekly, @daily, @hourly).
var parser = cron.MustNewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom |
	cron.Month | cron.Dow | cron.Descriptor | cron.DowOrDom)

// parseSpec parses spec in the time zone tz (an IANA name; "" is UTC, so
// that schedulers on hosts of different local zones agree), checked at
// now for a slot to come.
func parseSpec(sp, tz string, now time.Time) (slots, error) {
	fail := func(reason string) error { return &SpecError{Spec: sp, TZ: tz, Reason: reason} }
	if rest, ok := strings.CutPrefix(sp, "@every "); ok {
		d, err := time.ParseDuration(strings.TrimSpace(rest))
		if err != nil || d < time.Millisecond {
			return nil, fail("@every takes a duration of at least 1ms")
		}
		return every(d), nil
	}
	if strings.HasPrefix(sp, "TZ=") || strings.HasPrefix(sp, "CRON_TZ=") {
		return nil, fail("give the time zone as Schedule.TZ, not in the spec")
	}
	if tz == "" {
		tz = "UTC"
	}
	if _, err := time.LoadLocation(tz); err != nil {
		return nil, fail("unknown time zone: " + err.Error())
	}
	s, err := parser.Parse("CRON_TZ=" + tz + " " + sp)
	if err != nil {
		return nil, fail(err.Error())
	}
	p, ok := s.(cron.ScheduleWithPrev)
	if !ok {
		return nil, fail("the parser gave a schedule without Prev")
	}
	c := spec{p}
	if c.next(now).IsZero() {
		return nil, &SpecError{Spec: sp, TZ: tz, Reason: "no slot to come", never: true}
	}
	return c, nil
}

// dueSlots returns the slots to fire at now, ascending: the latest slot at
// or before now, after last, and up to catchUp slots before it that are
// after last too. None when the latest is not after last.
func dueSlots(s slots, last, now time.Time, catchUp int) []time.Time {
	due := s.latest(now)
	if due.IsZero() || !due.After(last) {
		return nil
	}
	out := []time.Time{due}
	for len(out) <= catchUp {
		p := s.latest(out[len(out)-1].Add(-time.Nanosecond))
		if p.IsZero() || !p.After(last) {
			break
		}
		out = append(out, p)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}
