package servertest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// NeedSentinels is StartSentinels for one test, stopped at its cleanup.
// Without a server binary the test is skipped, except under CI=true,
// where it fails; any other failure to start fails it.
func NeedSentinels(t testing.TB, o SentinelOptions) *SentinelSet {
	t.Helper()
	set, err := StartSentinels(o)
	if errors.Is(err, ErrNoServer) && !InCI() {
		t.Skip(SkipMessage)
	}
	if err != nil {
		t.Fatalf("servertest: cannot start sentinels (CI=%v): %v", InCI(), err)
	}
	t.Cleanup(set.Stop)
	return set
}

// Failover has the first sentinel fail the master set over (SENTINEL
// FAILOVER, asked again while it answers NOGOODSLAVE: a replica's state
// not yet fresh) and returns the primary it replaces and when the
// failover was accepted.
func (set *SentinelSet) Failover() (old *Server, at time.Time, err error) {
	if old, err = set.Primary(); err != nil {
		return nil, at, err
	}
	deadline := time.Now().Add(sentinelWait)
	for {
		at = time.Now()
		_, err = set.Sentinels[0].Do("SENTINEL", "FAILOVER", set.MasterName)
		if err == nil || !strings.Contains(err.Error(), "NOGOODSLAVE") || at.After(deadline) {
			return old, at, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Until polls cond every 10 ms until it holds; it fails the test, naming
// what was waited for, when ctx ends first.
func Until(t testing.TB, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not before %v", what, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}
