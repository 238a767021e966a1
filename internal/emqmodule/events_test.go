package emqmodule

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// subscriber reads a server's keyevent notifications (db 0) and the
// marker channel, over a connection of its own.
type subscriber struct {
	c  net.Conn
	rd *bufio.Reader
}

func subscribe(t *testing.T, addr string) *subscriber {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	s := &subscriber{c: c, rd: bufio.NewReader(c)}
	_, err = c.Write([]byte("PSUBSCRIBE __keyevent@0__:*\r\nSUBSCRIBE emq-marker\r\n"))
	require.NoError(t, err)
	s.next(t) // psubscribe
	s.next(t) // subscribe
	return s
}

// next reads one RESP2 array of bulk strings and integers.
func (s *subscriber) next(t *testing.T) []string {
	t.Helper()
	s.c.SetReadDeadline(time.Now().Add(time.Minute)) // only against a hang
	line := s.line(t)
	require.True(t, strings.HasPrefix(line, "*"), "not an array: %q", line)
	n, _ := strconv.Atoi(line[1:])
	out := make([]string, n)
	for i := range out {
		l := s.line(t)
		switch l[0] {
		case ':':
			out[i] = l[1:]
		case '$':
			m, _ := strconv.Atoi(l[1:])
			b := make([]byte, m+2)
			_, err := io.ReadFull(s.rd, b)
			require.NoError(t, err)
			out[i] = string(b[:m])
		default:
			t.Fatalf("unexpected %q", l)
		}
	}
	return out
}

func (s *subscriber) line(t *testing.T) string {
	l, err := s.rd.ReadString('\n')
	require.NoError(t, err)
	return strings.TrimRight(l, "\r\n")
}

// until returns the events ("event key") received before the marker.
func (s *subscriber) until(t *testing.T, marker string) []string {
	t.Helper()
	var evs []string
	for {
		m := s.next(t)
		if m[0] == "message" && m[1] == "emq-marker" {
			require.Equal(t, marker, m[2])
			return evs
		}
		require.Equal(t, "pmessage", m[0], "%q", m)
		evs = append(evs, strings.TrimPrefix(m[2], "__keyevent@0__:")+" "+m[3])
	}
}

// TestKeyspaceEvents: with notify-keyspace-events KEA each transition
// fires the events its script fires, in the script's order: the sets'
// del when they empty, claim's zpopmin and hincrby, a batch claim's
// zremrangebyrank per round, one zadd or zrem per command of up to 1,000
// members, no zadd for a member already at its score, retry's two hset.
func TestKeyspaceEvents(t *testing.T) {
	s, n := pair(t)
	scr, nat := newSide(t, "script", s.Addr, false), newSide(t, "module", n.Addr, true)
	onBoth(t, scr, nat, "CONFIG", "SET", "notify-keyspace-events", "KEA")
	t.Cleanup(func() {
		scr.raw(t, "CONFIG", "SET", "notify-keyspace-events", "")
		nat.raw(t, "CONFIG", "SET", "notify-keyspace-events", "")
	})
	ss, ns := subscribe(t, s.Addr), subscribe(t, n.Addr)
	q := qk("ev")
	p, a, d, x := q.sets()
	ja, jb, jc, jd := "JOB0000000000A", "JOB0000000000B", "JOB0000000000C", "JOB0000000000D"
	ghost := "JOB000000000"
	marks := 0
	// quiet runs setup commands on both and drops their events.
	quiet := func(cmds ...[]string) {
		for _, c := range cmds {
			onBoth(t, scr, nat, c...)
		}
		marks++
		mk := strconv.Itoa(marks)
		onBoth(t, scr, nat, "PUBLISH", "emq-marker", mk)
		ss.until(t, mk)
		ns.until(t, mk)
	}
	fresh := func(pending []string, claimed []string) {
		quiet([]string{"FLUSHALL"}, []string{"SET", "{emq}:version", "echomq:6.0.0"})
		for _, id := range append(append([]string(nil), pending...), claimed...) {
			if id == ghost {
				quiet([]string{"ZADD", p, "0", id})
				continue
			}
			quiet([]string{"HSET", q.row(id), "state", "pending", "attempts", "0", "payload", "p" + id}, []string{"ZADD", p, "0", id})
		}
		if len(claimed) > 0 {
			// The claimed ids are the first in pending: claim them.
			scr.run(t, false, "claim_batch", []string{p, a, q.base()}, []string{"500000000", strconv.Itoa(len(claimed))})
			nat.run(t, true, "claim_batch", []string{p, a, q.base()}, []string{"500000000", strconv.Itoa(len(claimed))})
			quiet()
		}
	}
	var many, manyArgs, manyDone []string
	for i := 0; i < 1500; i++ {
		id := fmt.Sprintf("JOB%011d", i)
		many = append(many, id)
		manyArgs = append(manyArgs, id, "p")
		manyDone = append(manyDone, id, "1")
	}
	cases := []struct {
		pending, claimed []string
		st               step
	}{
		{[]string{ghost}, nil, step{"enqueue", []string{q.row(ghost), p}, []string{ghost, "x"}, "1"}}, // no zadd: at its score already
		{nil, nil, step{"enqueue_batch", []string{p, q.base()}, manyArgs, ""}},
		{many, nil, step{"claim_batch", []string{p, a, q.base()}, []string{"500000000", "1500"}, ""}},
		{nil, many[:1200], step{"complete_batch", []string{a, q.base()}, append([]string{"0"}, manyDone[:2400]...), ""}},
		{nil, many[:1200], step{"settle_claim", []string{p, a, d, x, q.base()},
			append([]string{"500000000", "0", "0", "1200", "0", "0"}, manyDone[:2400]...), ""}},
		{nil, nil, step{"enqueue", []string{q.row(ja), p}, []string{ja, "x"}, "1"}},
		{[]string{ja}, nil, step{"enqueue", []string{q.row(ja), p}, []string{ja, "x"}, "0"}},
		{[]string{ghost}, nil, step{"enqueue_at", []string{q.row(ja), d}, []string{ja, "x", "5"}, "1"}},
		{[]string{jb}, nil, step{"enqueue_batch", []string{p, q.base()}, []string{ja, "x", jb, "y", jc, "z", ja, "w"}, "[1 0 1 0]"}},
		{[]string{ja}, nil, step{"claim", []string{p, a, q.base()}, []string{"500000000"}, ""}},
		{[]string{ghost, ja}, nil, step{"claim", []string{p, a, q.base()}, []string{"500000000"}, "[]"}},
		{[]string{ghost, ja, jb, jc}, nil, step{"claim_batch", []string{p, a, q.base()}, []string{"500000000", "2"}, ""}},
		{[]string{ja, jb}, nil, step{"claim_batch", []string{p, a, q.base()}, []string{"500000000", "5"}, ""}},
		{nil, []string{ja}, step{"complete", []string{a, q.row(ja)}, []string{ja, "1", "0"}, "1"}},
		{nil, []string{ja, jb}, step{"complete", []string{a, q.row(ja)}, []string{ja, "1", "500000000"}, "1"}},
		{nil, []string{ja, jb}, step{"complete_batch", []string{a, q.base()}, []string{"0", ja, "1", jb, "1"}, "[1 1]"}},
		{nil, []string{ja, jb, jc}, step{"complete_batch", []string{a, q.base()}, []string{"500000000", ja, "1", jb, "1"}, "[1 1]"}},
		{nil, []string{ja}, step{"retry", []string{a, q.row(ja), p, d, x}, []string{ja, "1", "0", "3", "e"}, "1"}},
		{nil, []string{ja}, step{"retry", []string{a, q.row(ja), p, d, x}, []string{ja, "1", "500000000", "3", "e"}, "1"}},
		{nil, []string{ja}, step{"retry", []string{a, q.row(ja), p, d, x}, []string{ja, "1", "0", "1", "e"}, "2"}},
		{nil, []string{ja}, step{"extend", []string{a, q.row(ja)}, []string{ja, "1", "600000000"}, "1"}},
		{nil, nil, step{"promote", []string{d, p, q.base()}, []string{"10"}, "0"}},
		{nil, []string{ja, jb}, step{"settle_claim", []string{p, a, d, x, q.base()},
			[]string{"500000000", "2", "0", "1", "1", "0", ja, "1", jb, "1", "0", "3", "e"}, ""}},
		{[]string{jc, jd}, []string{ja, jb}, step{"settle_claim", []string{p, a, d, x, q.base()},
			[]string{"500000000", "3", "500000000", "1", "0", "1", ja, "1", jb, "1"}, ""}},
		{[]string{ghost, jc}, []string{ja, jb}, step{"settle_claim", []string{p, a, d, x, q.base()},
			[]string{"500000000", "1", "0", "2", "0", "0", ja, "1", jb, "1"}, ""}},
	}
	fired := 0
	for i, c := range cases {
		fresh(c.pending, c.claimed)
		if c.st.name == "promote" {
			quiet([]string{"HSET", q.row(ja), "state", "delayed", "attempts", "0", "payload", "pa"},
				[]string{"ZADD", d, "1", ja, "2", ghost, "3", jb}, []string{"HSET", q.row(jb), "state", "delayed"})
			c.st.want = "3"
		}
		got := bothN(t, scr, nat, c.st)
		mk := "case" + strconv.Itoa(i)
		onBoth(t, scr, nat, "PUBLISH", "emq-marker", mk)
		es, en := ss.until(t, mk), ns.until(t, mk)
		require.Equal(t, es, en, "%s %q -> %s: events, script vs module", c.st.name, c.st.args, got)
		fired += len(es)
	}
	require.Greater(t, fired, 3*len(cases), "the cases fired events")
}
