// Package lazytimer is the timeout timer of a handler slot, shared by
// emq's Worker and the job system's Server: one timer per slot, armed
// at a job's start only when it is not armed already for an earlier
// time, never stopped between jobs; when it fires early (for a job since
// finished) the owner arms it for the running job's time left. So a job
// costs the timer nothing unless its timeout is shorter than the one
// before.
//
// A Timer is not safe for concurrent use: its owner guards it with the
// lock that guards the job it times (the slot's), in the timer's
// function too.
package lazytimer

import "time"

// Timer is a lazily armed timer. The zero value is not ready: use New.
type Timer struct {
	t     *time.Timer
	armed bool      // the timer will fire, at at
	at    time.Time // when
}

// New returns a stopped Timer that calls f when it fires.
func New(f func()) Timer {
	t := time.AfterFunc(time.Hour, f)
	t.Stop()
	return Timer{t: t}
}

// Arm makes sure the timer fires by now+d: it is armed anew only when it
// was not armed, or for a later time.
func (t *Timer) Arm(now time.Time, d time.Duration) {
	if due := now.Add(d); !t.armed || due.Before(t.at) {
		t.t.Reset(d)
		t.armed, t.at = true, due
	}
}

// Fired records that the timer fired: called first by its function.
func (t *Timer) Fired() { t.armed = false }

// Stop stops the timer, reporting whether it was running (as
// time.Timer's Stop); it fires no more until armed.
func (t *Timer) Stop() bool {
	t.armed = false
	return t.t.Stop()
}
