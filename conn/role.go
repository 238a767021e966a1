package conn

import "fmt"

// role is who holds a Conn's reader role (Conn.reader). It changes only
// through setRole, with mu held, along these transitions; any other is a
// bug in this package, and setRole panics on it:
//
//	from        to          where                      why
//	free        leader      submit                     a waiting caller reads its own replies (lead.go)
//	free        background  submit, fault, readLoop    replies owed to a caller who does not read, a fault to report, OnPush (background.go)
//	leader      free        lead                       its replies read, nothing else owed
//	leader      background  lead                       its replies read or its ctx ended, more owed
//	background  free        readSession                nothing owed (never with OnPush)
//	leader      dead        die                        the connection failed: every call ended (read.go)
//	background  dead        die                        likewise
//
// Dead is final. The holder of leader or background is the only goroutine
// that reads the socket and touches the reader's fields (rd, local, li,
// idx); free means nothing is owed and nobody reads.
type role uint8

const (
	roleFree       role = iota // nothing owed, nobody reads
	roleLeader                 // a caller reads for its own replies
	roleBackground             // the reader goroutine reads
	roleDead                   // the connection failed; every call has ended
)

func (r role) String() string {
	switch r {
	case roleFree:
		return "free"
	case roleLeader:
		return "leader"
	case roleBackground:
		return "background"
	case roleDead:
		return "dead"
	}
	return fmt.Sprintf("role(%d)", uint8(r))
}

// roleMoves is the table above: bit 4*from+to is set for every allowed
// transition.
const roleMoves = 1<<(4*roleFree+roleLeader) | 1<<(4*roleFree+roleBackground) |
	1<<(4*roleLeader+roleFree) | 1<<(4*roleLeader+roleBackground) | 1<<(4*roleLeader+roleDead) |
	1<<(4*roleBackground+roleFree) | 1<<(4*roleBackground+roleDead)

// canMove reports whether the reader role may go from from to to.
func canMove(from, to role) bool {
	return from < 4 && to < 4 && uint16(roleMoves)>>(4*from+to)&1 != 0
}

// setRole moves the reader role to to, with mu held. The check is a
// table lookup and a predictable branch, inlined: it costs the hot path
// nothing measurable.
func (c *Conn) setRole(to role) {
	if !canMove(c.reader, to) {
		panic(badMove{c.reader, to})
	}
	c.reader = to
}

// badMove is the panic of a transition the table refuses: a bug in this
// package.
type badMove struct{ from, to role }

func (m badMove) Error() string {
	return fmt.Sprintf("conn: reader role %v -> %v is not a transition", m.from, m.to)
}

// handToReader gives the free reader role to the reader goroutine (or the
// leader's, when it lets go with more owed). It is called with mu held.
func (c *Conn) handToReader() {
	c.setRole(roleBackground)
	select {
	case c.rwake <- struct{}{}:
	default:
	}
}
