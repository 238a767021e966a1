package sentinel_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/sentinel"
)

// TestResolve runs one deployment with passwords on the data nodes and
// on the sentinels apart: a URL resolves the primary and commands reach
// it; the wrong sentinel password and an unknown master name are typed
// errors with nothing dialed to a data node; with the first sentinel
// down the others answer.
func TestResolve(t *testing.T) {
	set := startSet(t, servertest.SentinelOptions{Replicas: 1, Password: "data-pw", SentinelPassword: "sent-pw"})
	ctx := tctx(t)
	primary, err := set.Primary()
	if err != nil {
		t.Fatal(err)
	}
	hosts := strings.Join(set.SentinelAddrs(), ",")

	for _, scheme := range []string{"redis+sentinel", "valkey+sentinel"} {
		t.Run("url/"+scheme, func(t *testing.T) {
			url := fmt.Sprintf("%s://:data-pw@%s/%s/3?sentinel_password=sent-pw&sentinel_timeout=500ms&client_name=s", scheme, hosts, set.MasterName)
			cl, err := sentinel.Connect(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			if got := cl.MasterSet().Primary(); got != primary.Addr {
				t.Fatalf("primary %s, want %s", got, primary.Addr)
			}
			if _, err := cl.Do(ctx, "SET", "k-"+scheme, "v"); err != nil {
				t.Fatal(err)
			}
			got, err := primary.Do("EVAL", "redis.call('SELECT', 3) return redis.call('GET', KEYS[1])", "1", "k-"+scheme)
			if err != nil || got != "v" {
				t.Fatalf("on the primary's db 3: %q, %v", got, err)
			}
			if s := fmt.Sprint(cl.MasterSet().Sentinels()); !strings.Contains(s, set.Sentinels[2].Addr) {
				t.Fatalf("sentinels %s", s)
			}
		})
	}

	t.Run("wrong sentinel password", func(t *testing.T) {
		o := opts(set, "data-pw", "nope")
		_, err := sentinel.New(ctx, o)
		if !errors.Is(err, sentinel.ErrSentinelAuth) || !errors.Is(err, sentinel.ErrNoSentinel) {
			t.Fatalf("err %v, want ErrSentinelAuth", err)
		}
		if strings.Contains(err.Error(), "nope") {
			t.Fatalf("the password is in the error: %v", err)
		}
		var re *sentinel.ResolveError
		if !errors.As(err, &re) || len(re.Tried) != 3 {
			t.Fatalf("want a ResolveError with 3 sentinels tried: %#v", err)
		}
		_, err = sentinel.New(ctx, opts(set, "data-pw", ""))
		if !errors.Is(err, sentinel.ErrSentinelAuth) {
			t.Fatalf("no sentinel password: %v, want ErrSentinelAuth", err)
		}
	})

	t.Run("unknown master", func(t *testing.T) {
		o := opts(set, "data-pw", "sent-pw")
		o.MasterName = "nosuchmaster"
		_, err := sentinel.New(ctx, o)
		if !errors.Is(err, sentinel.ErrUnknownMaster) {
			t.Fatalf("err %v, want ErrUnknownMaster", err)
		}
	})

	t.Run("wrong data password", func(t *testing.T) {
		_, err := sentinel.NewClient(ctx, opts(set, "wrong", "sent-pw"))
		var se interface{ Code() string }
		if !errors.As(err, &se) || se.Code() != "WRONGPASS" {
			t.Fatalf("err %v, want the data node's WRONGPASS", err)
		}
	})

	t.Run("bad options", func(t *testing.T) {
		for _, url := range []string{
			"redis://" + hosts + "/m", "redis+sentinel://" + hosts, "redis+sentinel://" + hosts + "/",
			"redis+sentinel://a:1,,b:2/m", "redis+sentinel://a:99999/m", "redis+sentinel://a:1/m/x",
			"redis+sentinel://a:1/m?nosuch=1", "redis+sentinel://:p#w@a:1/m", "redis+sentinel://a:1/m/1/2",
		} {
			if _, err := sentinel.ParseURL(url); !errors.Is(err, sentinel.ErrBadOptions) {
				t.Errorf("%s: %v, want ErrBadOptions", url, err)
			}
		}
		if _, err := sentinel.New(ctx, sentinel.Options{MasterName: "m"}); !errors.Is(err, sentinel.ErrBadOptions) {
			t.Errorf("no sentinels: %v", err)
		}
	})

	t.Run("first sentinel down", func(t *testing.T) {
		set.Sentinels[0].Kill()
		defer func() {
			if err := set.Sentinels[0].Restart(); err != nil {
				t.Error(err)
			}
		}()
		cl := newClient(t, opts(set, "data-pw", "sent-pw"))
		if _, err := cl.Do(ctx, "SET", "k", "v"); err != nil {
			t.Fatal(err)
		}
		if got := cl.MasterSet().Sentinels()[0]; got == set.Sentinels[0].Addr {
			t.Fatalf("the dead sentinel is still asked first")
		}
	})
}

// TestLyingSentinel: a "sentinel" (a scripted peer: no real sentinel
// names a replica) that names a replica as the primary. The role check
// refuses the replica: a typed error, and nothing but the check reached
// the replica.
func TestLyingSentinel(t *testing.T) {
	set := startSet(t, servertest.SentinelOptions{Replicas: 1, Sentinels: 1, Quorum: 1})
	replica := set.Data[1]
	replica.ResetStats(t)
	liar := lyingSentinel(t, replica.Addr)
	o := opts(set, "", "")
	o.Sentinels = []string{liar}
	_, err := sentinel.NewClient(tctx(t), o)
	var re *sentinel.RoleError
	if !errors.Is(err, sentinel.ErrNotPrimary) || !errors.As(err, &re) || re.Addr != replica.Addr || re.Role != "slave" {
		t.Fatalf("err %v, want a RoleError for %s", err, replica.Addr)
	}
	for _, c := range []string{"set", "select", "get"} {
		if n := replica.CommandCalls(t, c); n != 0 {
			t.Fatalf("%s ran %d times on the replica", c, n)
		}
	}
}
