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
