package servertest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Cluster is a private Valkey/Redis Cluster: primaries with the slots
// spread evenly, and optionally replicas.
type Cluster struct {
	// Primaries hold the slots: primary i the i-th even share.
	Primaries []*Server
	// Replicas[i] replicates Primaries[i % len(Primaries)].
	Replicas []*Server
	// IDs maps a server's Addr to its cluster node id.
	IDs map[string]string
}

// Nodes returns every server, primaries first.
func (c *Cluster) Nodes() []*Server {
	return append(append([]*Server(nil), c.Primaries...), c.Replicas...)
}

// Addrs returns every node's address, primaries first.
func (c *Cluster) Addrs() []string {
	var a []string
	for _, s := range c.Nodes() {
		a = append(a, s.Addr)
	}
	return a
}

// Stop stops every node.
func (c *Cluster) Stop() {
	for _, s := range c.Nodes() {
		s.Stop()
	}
}

// clusterWait bounds how long StartCluster waits for the cluster to form.
const clusterWait = 30 * time.Second

// StartCluster starts primaries nodes (and replicasPer replicas of each)
// in cluster mode from the same binary as Start, assigns the slots with
// CLUSTER ADDSLOTSRANGE, joins them with CLUSTER MEET, attaches replicas
// with CLUSTER REPLICATE, and waits until every node reports
// cluster_state:ok and knows every other node.
func StartCluster(primaries, replicasPer int, opts Options) (*Cluster, error) {
	if primaries < 1 {
		return nil, errors.New("servertest: a cluster needs a primary")
	}
	opts.Cluster = true
	c := &Cluster{IDs: map[string]string{}}
	ok := false
	defer func() {
		if !ok {
			c.Stop()
		}
	}()
	for i := range primaries * (1 + replicasPer) {
		s, err := Start(opts)
		if err != nil {
			return nil, err
		}
		if i < primaries {
			c.Primaries = append(c.Primaries, s)
		} else {
			c.Replicas = append(c.Replicas, s)
		}
		id, err := s.Do("CLUSTER", "MYID")
		if err != nil {
			return nil, fmt.Errorf("servertest: CLUSTER MYID: %w", err)
		}
		c.IDs[s.Addr] = id
	}
	per := 16384 / primaries
	for i, s := range c.Primaries {
		lo, hi := i*per, (i+1)*per-1
		if i == primaries-1 {
			hi = 16383
		}
		if _, err := s.Do("CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(lo), strconv.Itoa(hi)); err != nil {
			return nil, fmt.Errorf("servertest: CLUSTER ADDSLOTSRANGE on %s: %w", s.Addr, err)
		}
	}
	first := c.Primaries[0]
	for _, s := range c.Nodes()[1:] {
		if _, err := s.Do("CLUSTER", "MEET", "127.0.0.1", strconv.Itoa(first.Port), strconv.Itoa(first.ClusterPort)); err != nil {
			return nil, fmt.Errorf("servertest: CLUSTER MEET from %s: %w", s.Addr, err)
		}
	}
	if err := c.waitKnown(); err != nil {
		return nil, err
	}
	for i, s := range c.Replicas {
		p := c.Primaries[i%primaries]
		if _, err := s.Do("CLUSTER", "REPLICATE", c.IDs[p.Addr]); err != nil {
			return nil, fmt.Errorf("servertest: CLUSTER REPLICATE on %s: %w", s.Addr, err)
		}
	}
	if err := c.WaitOK(); err != nil {
		return nil, err
	}
	ok = true
	return c, nil
}

// waitKnown waits until every node lists every other in CLUSTER NODES.
func (c *Cluster) waitKnown() error {
	n := len(c.Nodes())
	return c.poll("every node knowing the others", func(s *Server) (bool, error) {
		out, err := s.Do("CLUSTER", "NODES")
		if err != nil {
			return false, err
		}
		return strings.Count(strings.TrimSpace(out), "\n")+1 == n && !strings.Contains(out, "handshake"), nil
	})
}

// WaitOK waits until every running node reports cluster_state:ok, every
// slot is served, and every replica's link to its primary is up.
func (c *Cluster) WaitOK() error {
	return c.poll("cluster_state:ok", func(s *Server) (bool, error) {
		info, err := s.Do("CLUSTER", "INFO")
		if err != nil {
			return false, err
		}
		if !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_slots_ok:16384") {
			return false, nil
		}
		repl, err := s.Do("INFO", "replication")
		if err != nil {
			return false, err
		}
		return !strings.Contains(repl, "role:slave") || strings.Contains(repl, "master_link_status:up"), nil
	})
}

// poll waits until cond holds on every running node.
func (c *Cluster) poll(what string, cond func(*Server) (bool, error)) error {
	deadline := time.Now().Add(clusterWait)
	for {
		all, lastErr := true, error(nil)
		for _, s := range c.Nodes() {
			if !s.Running() {
				continue
			}
			ok, err := cond(s)
			if err != nil {
				lastErr = err
			}
			if !ok {
				all = false
				break
			}
		}
		if all {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("servertest: cluster never reached %s (last error: %v)", what, lastErr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// SlotOwner returns the primary StartCluster gave slot: the i-th even
// share is Primaries[i]'s (a migration since is not seen).
func (c *Cluster) SlotOwner(slot int) *Server {
	per := 16384 / len(c.Primaries)
	return c.Primaries[min(slot/per, len(c.Primaries)-1)]
}

// MigrateSlot moves slot from src to dst the way an operator does:
// IMPORTING on dst, MIGRATING on src, MIGRATE of the slot's keys batch at
// a time (between, when set, runs after each batch, so that a load goes
// on meanwhile), then SETSLOT NODE on every primary.
func (c *Cluster) MigrateSlot(slot int, src, dst *Server, batch int, between func()) error {
	s, n := strconv.Itoa(slot), strconv.Itoa(batch)
	if _, err := dst.Do("CLUSTER", "SETSLOT", s, "IMPORTING", c.IDs[src.Addr]); err != nil {
		return fmt.Errorf("servertest: SETSLOT IMPORTING on %s: %w", dst.Addr, err)
	}
	if _, err := src.Do("CLUSTER", "SETSLOT", s, "MIGRATING", c.IDs[dst.Addr]); err != nil {
		return fmt.Errorf("servertest: SETSLOT MIGRATING on %s: %w", src.Addr, err)
	}
	for {
		out, err := src.Do("CLUSTER", "GETKEYSINSLOT", s, n)
		if err != nil {
			return fmt.Errorf("servertest: GETKEYSINSLOT on %s: %w", src.Addr, err)
		}
		keys := strings.Fields(out)
		if len(keys) == 0 {
			break
		}
		args := append([]string{"MIGRATE", "127.0.0.1", strconv.Itoa(dst.Port), "", "0", "5000", "KEYS"}, keys...)
		if _, err := src.Do(args...); err != nil {
			return fmt.Errorf("servertest: MIGRATE from %s: %w", src.Addr, err)
		}
		if between != nil {
			between()
		}
	}
	for _, p := range c.Primaries {
		if _, err := p.Do("CLUSTER", "SETSLOT", s, "NODE", c.IDs[dst.Addr]); err != nil {
			return fmt.Errorf("servertest: SETSLOT NODE on %s: %w", p.Addr, err)
		}
	}
	return nil
}

// Failover runs CLUSTER FAILOVER (the graceful, manual one) on replica
// and waits until it reports role:master and its old primary role:slave.
func (c *Cluster) Failover(replica *Server) error {
	if _, err := replica.Do("CLUSTER", "FAILOVER"); err != nil {
		return fmt.Errorf("servertest: CLUSTER FAILOVER on %s: %w", replica.Addr, err)
	}
	return poll("CLUSTER FAILOVER on "+replica.Addr+" done", func() (bool, error) {
		info, err := replica.Do("INFO", "replication")
		return err == nil && strings.Contains(info, "role:master\r\n"), err
	})
}
