package cluster

import (
	"context"
	"time"
)

// MinRefresh is the least time between topology reads asked for by calls.
const MinRefresh = minRefresh

// SetRetireGrace sets how long the nodes of the Clients made from now on
// wait for their calls once they left the topology, until the test ends.
func SetRetireGrace(t interface{ Cleanup(func()) }, d time.Duration) {
	old := retireGrace
	retireGrace = d
	t.Cleanup(func() { retireGrace = old })
}

// RefreshFrom reads the topology from the node at addr, as a refresh
// does when that node answers first.
func (cl *Client) RefreshFrom(ctx context.Context, addr string) error {
	return cl.readFrom(ctx, addr)
}
