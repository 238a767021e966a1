package conn

import (
	"errors"
	"testing"
)

// TestRoleTransitions: the reader role moves exactly along the table in
// role's doc comment: each allowed transition is taken, and every other
// one, dead's included, is refused by setRole with a badMove panic that
// leaves the role where it was.
func TestRoleTransitions(t *testing.T) {
	allowed := map[[2]role]bool{
		{roleFree, roleLeader}:       true,
		{roleFree, roleBackground}:   true,
		{roleLeader, roleFree}:       true,
		{roleLeader, roleBackground}: true,
		{roleLeader, roleDead}:       true,
		{roleBackground, roleFree}:   true,
		{roleBackground, roleDead}:   true,
	}
	all := []role{roleFree, roleLeader, roleBackground, roleDead, role(7)}
	for _, from := range all {
		for _, to := range all {
			want := allowed[[2]role{from, to}]
			if got := canMove(from, to); got != want {
				t.Errorf("canMove(%v, %v) = %t, want %t", from, to, got, want)
			}
			c := &Conn{reader: from}
			var p any
			func() {
				defer func() { p = recover() }()
				c.setRole(to)
			}()
			switch {
			case want && (p != nil || c.reader != to):
				t.Errorf("setRole %v -> %v: panic %v, role %v", from, to, p, c.reader)
			case !want:
				var m badMove
				if err, ok := p.(error); !ok || !errors.As(err, &m) || m != (badMove{from, to}) {
					t.Errorf("setRole %v -> %v: panic %v, want badMove", from, to, p)
				}
				if c.reader != from {
					t.Errorf("refused %v -> %v moved the role to %v", from, to, c.reader)
				}
			}
		}
	}
}

// BenchmarkSetRole: the setter's check against a bare store, for the
// "costs nothing measurable" claim (both inline; compare ns/op).
func BenchmarkSetRole(b *testing.B) {
	c := &Conn{}
	b.Run("checked", func(b *testing.B) {
		for b.Loop() {
			c.setRole(roleLeader)
			c.setRole(roleFree)
		}
	})
	b.Run("bare", func(b *testing.B) {
		for b.Loop() {
			c.reader = roleLeader
			c.reader = roleFree
		}
	})
}
