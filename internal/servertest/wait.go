package servertest

import (
	"testing"
	"time"
)

// HangGuard is how long Eventually waits before it fails a test: far
// longer than any condition takes on a loaded machine, so that only a
// hang reaches it.
const HangGuard = 30 * time.Second

// pollEvery is how often Eventually looks at its condition again.
const pollEvery = 2 * time.Millisecond

// Eventually returns as soon as cond holds, looking at it again every
// few milliseconds, and fails t (naming what it waited for) when it still
// does not hold after HangGuard. It is the tests' one poll loop: a test
// waits for a condition it can observe — a counter, a reply, a server's
// CLIENT LIST, a process gone — never for a length of time.
//
// cond runs on the calling goroutine and may call t.Fatal itself.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	eventually(t, what, cond, HangGuard)
}

// eventually is Eventually with the guard given.
func eventually(t testing.TB, what string, cond func() bool, guard time.Duration) {
	t.Helper()
	deadline := time.Now().Add(guard)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", guard, what)
			return
		}
		time.Sleep(pollEvery)
	}
}
