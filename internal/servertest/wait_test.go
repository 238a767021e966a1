package servertest

import (
	"testing"
	"time"
)

// Eventually returns at the first look at which its condition holds, and
// not before.
func TestEventuallyReturnsWhenTheConditionHolds(t *testing.T) {
	looks := 0
	Eventually(t, "the third look", func() bool { looks++; return looks == 3 })
	if looks != 3 {
		t.Fatalf("returned after %d looks, want 3", looks)
	}
}

// A condition that never holds fails the test once the guard has passed.
func TestEventuallyFailsAfterItsGuard(t *testing.T) {
	f := &fakeTB{}
	done := make(chan struct{})
	looks := 0
	go func() {
		defer close(done)
		eventually(f, "never", func() bool { looks++; return false }, 20*time.Millisecond)
	}()
	<-done
	if !f.failed || looks < 2 {
		t.Fatalf("failed %v after %d looks: want a failure after looking more than once", f.failed, looks)
	}
}
