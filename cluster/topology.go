package cluster

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/slot"
	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/resp"
)

// topology is one view of the cluster: which primary serves each slot.
// It is replaced whole, never changed in place, so readers need no lock.
type topology struct {
	owner    [slot.Count]int32 // index in addrs, or -1 when unassigned
	addrs    []string          // the primaries' addresses
	replicas [][]string        // replicas[i]: the online replicas of addrs[i]
}

// newTopology returns a topology with no slot assigned.
func newTopology() *topology {
	t := &topology{}
	for i := range t.owner {
		t.owner[i] = -1
	}
	return t
}

// addr returns the address of slot's primary, or "".
func (t *topology) addr(s uint16) string {
	if i := t.owner[s]; i >= 0 {
		return t.addrs[i]
	}
	return ""
}

// assign gives slots lo..hi to addr.
func (t *topology) assign(lo, hi int, addr string) {
	i := -1
	for j, a := range t.addrs {
		if a == addr {
			i = j
		}
	}
	if i < 0 {
		i = len(t.addrs)
		t.addrs = append(t.addrs, addr)
		t.replicas = append(t.replicas, nil)
	}
	for s := max(lo, 0); s <= hi && s < slot.Count; s++ {
		t.owner[s] = int32(i)
	}
}

// moved returns a copy of t with slot s served by addr.
func (t *topology) moved(s uint16, addr string) *topology {
	c := *t
	c.addrs = append([]string(nil), t.addrs...)
	c.replicas = append([][]string(nil), t.replicas...)
	c.assign(int(s), int(s), addr)
	return &c
}

// replicasOf returns the replicas of the primary at addr.
func (t *topology) replicasOf(addr string) []string {
	for i, a := range t.addrs {
		if a == addr {
			return t.replicas[i]
		}
	}
	return nil
}

// allReplicas returns every primary's replicas.
func (t *topology) allReplicas() []string {
	var out []string
	for _, r := range t.replicas {
		out = append(out, r...)
	}
	return out
}

// setReplicas records the replicas of the primary at addr, once it
// serves slots.
func (t *topology) setReplicas(addr string, rs []string) {
	for i, a := range t.addrs {
		if a == addr {
			t.replicas[i] = rs
		}
	}
}

// readTopology asks one node: CLUSTER SHARDS (7.0+), else CLUSTER SLOTS.
// host is the address the node was reached at, for nodes that announce
// no address of their own.
func readTopology(ctx context.Context, c conn.Sender, host string) (*topology, error) {
	s := wire.OwnSender(c) // the Client's own: the hooks do not see it
	v, err := wire.Do(ctx, s, "CLUSTER", "SHARDS")
	if err == nil {
		return parseShards(v, host)
	}
	if !resp.IsCode(err, resp.CodeErr) {
		return nil, fmt.Errorf("cluster: CLUSTER SHARDS: %w", err)
	}
	v, err = wire.Do(ctx, s, "CLUSTER", "SLOTS")
	if err != nil {
		return nil, fmt.Errorf("cluster: CLUSTER SLOTS: %w", err)
	}
	return parseSlots(v, host)
}

// parseShards reads CLUSTER SHARDS: per shard its slot ranges and its
// nodes; the online primary serves the ranges.
func parseShards(v resp.Value, host string) (*topology, error) {
	t := newTopology()
	for _, shard := range v.Elems {
		slots := field(shard, "slots")
		var primary string
		var replicas []string
		for _, n := range field(shard, "nodes").Elems {
			if field(n, "health").Text() != "online" {
				continue
			}
			ip := field(n, "endpoint").Text()
			if ip == "" || ip == "?" {
				ip = field(n, "ip").Text()
			}
			port := fieldInt(n, "port")
			if port == 0 {
				port = fieldInt(n, "tls-port")
			}
			switch field(n, "role").Text() {
			case "master":
				primary = joinAddr(ip, port, host)
			case "replica", "slave":
				replicas = append(replicas, joinAddr(ip, port, host))
			}
		}
		if primary == "" {
			continue // a shard without a healthy primary: its slots stay unassigned
		}
		for i := 0; i+1 < len(slots.Elems); i += 2 {
			t.assign(int(slots.Elems[i].Int), int(slots.Elems[i+1].Int), primary)
		}
		t.setReplicas(primary, replicas)
	}
	if len(t.addrs) == 0 {
		return nil, fmt.Errorf("cluster: CLUSTER SHARDS lists no primary serving slots")
	}
	return t, nil
}

// parseSlots reads CLUSTER SLOTS: [start, end, [ip, port, id], replicas…].
func parseSlots(v resp.Value, host string) (*topology, error) {
	t := newTopology()
	for _, r := range v.Elems {
		if r.Len() < 3 || r.Elems[2].Len() < 2 {
			continue
		}
		p := r.Elems[2]
		primary := joinAddr(p.Elems[0].Text(), int(p.Elems[1].Int), host)
		t.assign(int(r.Elems[0].Int), int(r.Elems[1].Int), primary)
		var replicas []string
		for _, e := range r.Elems[3:] {
			if e.Len() >= 2 {
				replicas = append(replicas, joinAddr(e.Elems[0].Text(), int(e.Elems[1].Int), host))
			}
		}
		t.setReplicas(primary, replicas)
	}
	if len(t.addrs) == 0 {
		return nil, fmt.Errorf("cluster: CLUSTER SLOTS lists no slots")
	}
	return t, nil
}

// joinAddr makes host:port, taking the host the node was reached at
// when the node announces none.
func joinAddr(ip string, port int, reached string) string {
	if ip == "" || ip == "?" {
		ip, _, _ = net.SplitHostPort(reached)
	}
	return net.JoinHostPort(ip, strconv.Itoa(port))
}

// parseRedirect reads "MOVED <slot> <addr>" or "ASK <slot> <addr>".
func parseRedirect(msg string) (s uint16, addr string, ok bool) {
	f := strings.Fields(msg)
	if len(f) < 3 {
		return 0, "", false
	}
	n, err := strconv.Atoi(f[1])
	if err != nil || n < 0 || n >= slot.Count {
		return 0, "", false
	}
	addr = f[2]
	if strings.HasPrefix(addr, ":") { // an announced empty host: same as reached
		addr = "127.0.0.1" + addr
	}
	return uint16(n), addr, true
}

// field returns a map's value by key: a RESP3 map, or the flat array a
// RESP2 server sends instead.
func field(v resp.Value, key string) resp.Value {
	for i := 0; i+1 < len(v.Elems); i += 2 {
		if bytes.EqualFold(v.Elems[i].Str, []byte(key)) {
			return v.Elems[i+1]
		}
	}
	return resp.Value{}
}

func fieldInt(v resp.Value, key string) int {
	f := field(v, key)
	if f.Type == resp.Integer {
		return int(f.Int)
	}
	n, _ := f.AsInt()
	return int(n)
}
