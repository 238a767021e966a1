package sentinel

import (
	"net"
	"testing"
	"time"
)

// announcing is a MasterSet that follows announcements only (no
// sentinel is asked: announced needs none), its primary a.
func announcing(a string) *MasterSet {
	return &MasterSet{
		opts:    Options{MasterName: "mymaster", FailoverPause: time.Hour},
		conns:   map[net.Conn]tracked{},
		kick:    make(chan struct{}, 1),
		primary: a,
	}
}

const (
	nodeA = "10.0.0.1:6379"
	nodeB = "10.0.0.2:6379"
	nodeC = "10.0.0.3:6379"
)

// TestAbortOfAnotherSentinelKeepsFence: with three sentinels, those that
// lost the leader's election announce -failover-abort-not-elected for the
// old primary while the leader promotes a replica, or after it announced
// the switch when they learn it late. Neither lifts the fence of the old
// primary (with the fence lifted, a dial whose sentinel has not switched
// yet takes the old primary, which still answers role master); only the
// leader's own abort of its promotion does.
func TestAbortOfAnotherSentinelKeepsFence(t *testing.T) {
	m := announcing(nodeA)
	m.announced("s1", evSelected, "slave "+nodeB+" 10.0.0.2 6379 @ mymaster 10.0.0.1 6379")
	if !m.fenced(nodeA) || m.candidate != nodeB {
		t.Fatalf("after +selected-slave: fence %q candidate %q", m.fence, m.candidate)
	}
	m.announced("s2", evAbortNE, "master mymaster 10.0.0.1 6379")
	if !m.fenced(nodeA) || m.candidate != nodeB {
		t.Errorf("another sentinel's abort lifted the fence: fence %q candidate %q", m.fence, m.candidate)
	}
	m.announced("s1", evSwitch, "mymaster 10.0.0.1 6379 10.0.0.2 6379")
	if m.Primary() != nodeB || !m.fenced(nodeA) {
		t.Fatalf("after +switch-master: primary %q fence %q", m.Primary(), m.fence)
	}
	for _, s := range []string{"s1", "s3"} {
		m.announced(s, evAbortNE, "master mymaster 10.0.0.1 6379")
		if !m.fenced(nodeA) {
			t.Errorf("%s's abort after the switch lifted the fence of %s", s, nodeA)
		}
	}

	// The leader's own abort ends its promotion: the fence is lifted.
	m = announcing(nodeA)
	m.announced("s1", evSelected, "slave "+nodeB+" 10.0.0.2 6379 @ mymaster 10.0.0.1 6379")
	m.announced("s1", evAbortPr, "master mymaster 10.0.0.1 6379")
	if m.fenced(nodeA) || m.candidate != "" {
		t.Errorf("the leader's abort kept the fence: fence %q candidate %q", m.fence, m.candidate)
	}
}

// TestLateSwitchAnnouncement: two failovers in a row (A to B, then B to
// C); a sentinel's +switch-master of the first arrives after another's
// of the second (they come on separate connections). The MasterSet
// stays on C: B, just replaced, is fenced.
func TestLateSwitchAnnouncement(t *testing.T) {
	m := announcing(nodeA)
	m.announced("s1", evSwitch, "mymaster 10.0.0.1 6379 10.0.0.2 6379")
	m.announced("s1", evSwitch, "mymaster 10.0.0.2 6379 10.0.0.3 6379")
	m.announced("s3", evSwitch, "mymaster 10.0.0.1 6379 10.0.0.2 6379")
	if got := m.Primary(); got != nodeC {
		t.Errorf("Primary() = %s after a late announcement of the first switch, want %s", got, nodeC)
	}
	if !m.fenced(nodeB) {
		t.Errorf("%s, replaced by %s, is not fenced (fence %q)", nodeB, nodeC, m.fence)
	}
}

// TestTryFailoverFences: a sentinel's +try-failover fences the primary at
// once, before any replica is selected (two of the sentinel's ticks before
// the promotion): its connections end and no dial goes to it. The fence
// stays while any sentinel that tried is still trying, through the
// leader's +selected-slave; it is lifted once every sentinel that tried
// has aborted with no replica selected. A +try-failover of a node other
// than the primary is ignored.
func TestTryFailoverFences(t *testing.T) {
	m := announcing(nodeA)
	client, server := net.Pipe()
	defer server.Close()
	m.conns[client] = tracked{addr: nodeA}
	m.announced("s1", evTry, "master mymaster 10.0.0.1 6379")
	if !m.fenced(nodeA) || m.candidate != "" {
		t.Fatalf("after +try-failover: fence %q candidate %q", m.fence, m.candidate)
	}
	if len(m.conns) != 0 {
		t.Errorf("the connection to the primary trying to be replaced is still tracked")
	}
	if _, err := client.Write([]byte("x")); err == nil {
		t.Errorf("the connection to %s was not ended", nodeA)
	}

	// A second sentinel tries too; the first loses the election.
	m.announced("s2", evTry, "master mymaster 10.0.0.1 6379")
	m.announced("s1", evAbortNE, "master mymaster 10.0.0.1 6379")
	if !m.fenced(nodeA) {
		t.Fatalf("s1's abort lifted the fence while s2 still tries")
	}
	// s2 wins and selects a replica: the fence is the leader's now.
	m.announced("s2", evSelected, "slave "+nodeB+" 10.0.0.2 6379 @ mymaster 10.0.0.1 6379")
	if !m.fenced(nodeA) || m.candidate != nodeB || m.fenceBy != "s2" {
		t.Fatalf("after +selected-slave: fence %q candidate %q by %q", m.fence, m.candidate, m.fenceBy)
	}
	m.announced("s3", evAbortNE, "master mymaster 10.0.0.1 6379")
	if !m.fenced(nodeA) {
		t.Errorf("a sentinel that never tried lifted the leader's fence")
	}

	// Every sentinel that tried aborts with no replica selected: lifted.
	m = announcing(nodeA)
	m.announced("s1", evTry, "master mymaster 10.0.0.1 6379")
	m.announced("s2", evTry, "master mymaster 10.0.0.1 6379")
	m.announced("s1", evAbortNE, "master mymaster 10.0.0.1 6379")
	m.announced("s2", evAbortNG, "master mymaster 10.0.0.1 6379")
	if m.fenced(nodeA) {
		t.Errorf("the fence outlived every attempt's abort: fence %q tries %v", m.fence, m.tries)
	}

	// Not the primary: ignored.
	m = announcing(nodeA)
	m.announced("s1", evTry, "master mymaster 10.0.0.2 6379")
	if m.fence != "" {
		t.Errorf("+try-failover of %s fenced %q", nodeB, m.fence)
	}
	m.announced("s1", evTry, "master othermaster 10.0.0.1 6379")
	if m.fence != "" {
		t.Errorf("+try-failover of another master set fenced %q", m.fence)
	}
}
