package servertest

import (
	"strings"
	"testing"
)

func TestStartCluster(t *testing.T) {
	if _, err := findBinary(); err != nil {
		if InCI() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	c, err := StartCluster(3, 1, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	if len(c.Nodes()) != 6 {
		t.Fatalf("%d nodes", len(c.Nodes()))
	}
	for _, s := range c.Nodes() {
		info, err := s.Do("CLUSTER", "INFO")
		if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_known_nodes:6") {
			t.Fatalf("%s: %v\n%s", s.Addr, err, info)
		}
	}
	// slot 12739 ("123456789") is owned by the third primary.
	if _, err := c.Primaries[2].Do("SET", "123456789", "x"); err != nil {
		t.Fatalf("SET on the owner: %v", err)
	}
	if _, err := c.Primaries[0].Do("GET", "123456789"); err == nil || !strings.HasPrefix(err.Error(), "MOVED 12739 ") {
		t.Fatalf("GET on another primary: %v, want MOVED", err)
	}
}
