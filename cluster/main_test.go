package cluster_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/cluster"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
)

// shared is the package's 3-primary cluster, for the tests that do not
// change its topology; they flush it first.
var shared *servertest.Cluster

func TestMain(m *testing.M) {
	c, err := servertest.StartCluster(3, 0, servertest.Options{})
	if err != nil {
		if servertest.InCI() {
			fmt.Fprintln(os.Stderr, "cluster: no cluster could start under CI:", err)
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, "cluster: integration tests skip:", err)
	}
	shared = c
	code := m.Run()
	if c != nil {
		c.Stop()
	}
	os.Exit(code)
}

const waitLong = 60 * time.Second

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	t.Cleanup(cancel)
	return ctx
}

// needCluster skips (or fails under CI) without the shared cluster, and
// flushes it.
func needCluster(t testing.TB) *servertest.Cluster {
	t.Helper()
	if shared == nil {
		if servertest.InCI() {
			t.Fatal("no cluster")
		}
		t.Skip("no cluster")
	}
	for _, s := range shared.Primaries {
		_, err := s.Do("FLUSHALL")
		require.NoError(t, err)
		_, err = s.Do("SCRIPT", "FLUSH")
		require.NoError(t, err)
		_, err = s.Do("CONFIG", "RESETSTAT")
		require.NoError(t, err)
	}
	return shared
}

// newClient connects to c through its first node.
func newClient(t testing.TB, c *servertest.Cluster, mod ...func(*cluster.Options)) *cluster.Client {
	t.Helper()
	o := cluster.Options{Seeds: []string{c.Primaries[0].Addr}}
	for _, f := range mod {
		f(&o)
	}
	cl, err := cluster.NewClient(testCtx(t), o)
	require.NoError(t, err)
	t.Cleanup(func() { cl.Close() })
	return cl
}

// calls returns how many times a node ran a command (commandstats).
func calls(t testing.TB, s *servertest.Server, name string) int64 {
	t.Helper()
	info, err := s.Do("INFO", "commandstats")
	require.NoError(t, err)
	for _, line := range strings.Split(info, "\r\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_"+name+":calls="); ok {
			n, err := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
			require.NoError(t, err)
			return n
		}
	}
	return 0
}

var _ conn.Sender = (*cluster.Client)(nil)
