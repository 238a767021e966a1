package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/cluster"
	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/internal/servertest"
)

// Pointed at any node of a cluster, the CLI routes by slot: it reads and
// changes the queue on the primary that serves it.
func TestOnCluster(t *testing.T) {
	c, err := servertest.StartCluster(3, 0, servertest.Options{})
	if err != nil {
		if servertest.InCI() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	defer c.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := cluster.NewClient(ctx, cluster.Options{Seeds: []string{c.Primaries[0].Addr}})
	require.NoError(t, err)
	defer cl.Close()
	q, err := emq.Open(ctx, cl, "cq")
	require.NoError(t, err)
	for range 3 {
		_, err := q.Enqueue(ctx, []byte("x"))
		require.NoError(t, err)
	}
	for _, node := range c.Primaries { // whichever node the URL names
		code, out, errs := runArgs("-url", "redis://"+node.Addr, "-queue", "cq", "-json", "stats")
		require.Equal(t, exitOK, code, errs)
		require.Contains(t, out, `"pending":3`)
	}
	code, _, errs := runArgs("-url", "redis://"+c.Primaries[0].Addr, "-queue", "cq", "pause")
	require.Equal(t, exitOK, code, errs)
	paused, err := q.Paused(ctx)
	require.NoError(t, err)
	require.True(t, paused)
	require.False(t, strings.Contains(errs, "MOVED"))
}
