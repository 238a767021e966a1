package sentinel_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/sentinel"
)

// startSet starts a private Sentinel deployment for one test; without a
// server binary the test is skipped, except under CI=true.
func startSet(t testing.TB, o servertest.SentinelOptions) *servertest.SentinelSet {
	t.Helper()
	set, err := servertest.StartSentinels(o)
	if errors.Is(err, servertest.ErrNoServer) && !servertest.InCI() {
		t.Skip(servertest.SkipMessage)
	}
	if err != nil {
		t.Fatalf("cannot start sentinels (CI=%v): %v", servertest.InCI(), err)
	}
	t.Cleanup(set.Stop)
	return set
}

// tctx is a context that only stops a hang.
func tctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// opts are a MasterSet's options for set, with short timeouts.
func opts(set *servertest.SentinelSet, dataPassword, sentinelPassword string) sentinel.Options {
	o := sentinel.Options{
		MasterName: set.MasterName, Sentinels: set.SentinelAddrs(),
		SentinelPassword: sentinelPassword, SentinelTimeout: 500 * time.Millisecond,
	}
	o.Password = dataPassword
	o.DialTimeout, o.ReadTimeout = time.Second, 2*time.Second
	o.MinBackoff, o.MaxBackoff = 10*time.Millisecond, 100*time.Millisecond
	return o
}

// newClient is sentinel.NewClient, closed at cleanup.
func newClient(t *testing.T, o sentinel.Options) *sentinel.Client {
	t.Helper()
	cl, err := sentinel.NewClient(tctx(t), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// failover has a sentinel fail the master set over (SENTINEL FAILOVER)
// and waits until every sentinel names the new primary.
func failover(t *testing.T, set *servertest.SentinelSet) (old, now *servertest.Server) {
	t.Helper()
	old, err := set.Primary()
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, tctx(t), "SENTINEL FAILOVER accepted", func() bool {
		_, err := set.Sentinels[0].Do("SENTINEL", "FAILOVER", set.MasterName)
		// NOGOODSLAVE while a replica's state is not yet fresh: again.
		if err != nil && !strings.Contains(err.Error(), "NOGOODSLAVE") {
			t.Fatal(err)
		}
		return err == nil
	})
	now, err = set.WaitSwitch(old)
	if err != nil {
		t.Fatal(err)
	}
	return old, now
}

// waitFor polls cond every 10 ms until it holds or ctx ends.
func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not before %v", what, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}
