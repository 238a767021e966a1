package cluster

import (
	"bytes"
	"cmp"
	"slices"
	"strconv"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/resp"
)

// infoSlotStats is CLUSTER SLOT-STATS (Valkey 8.0+): each node answers
// for the slots it owns only, so the table's request policy sends it to
// every primary (all_shards); Valkey gives it no response policy, and
// neither a concatenation nor the first reply is what it asks for, so
// its replies are merged by mergeSlotStats, a rule of this package.
var infoSlotStats = cmds.Lookup("cluster|slot-stats")

// merge makes the one reply of a broadcast command from the primaries'
// replies: the command's own rule where the table's response policy
// does not say it (CLUSTER SLOT-STATS), else the policy's.
func (s *sub) merge() resp.Value {
	if s.info != nil && s.info == infoSlotStats {
		if v, ok := mergeSlotStats(s.buf, s.vals); ok {
			return v
		}
	}
	return aggregateReplies(s.info.Aggregate(), s.vals)
}

// slotStatsQuery is what a CLUSTER SLOT-STATS command asks: a range
// (SLOTSRANGE), or an order (ORDERBY metric [LIMIT n] [ASC|DESC], the
// server's defaults: every slot, descending).
type slotStatsQuery struct {
	orderBy []byte // the metric, nil for SLOTSRANGE
	limit   int
	asc     bool
}

// parseSlotStats reads the query of the CLUSTER SLOT-STATS command
// encoded in cmd; ok false when it is not one the servers accept (then
// their error replies are the reply).
func parseSlotStats(cmd []byte) (q slotStatsQuery, ok bool) {
	v, _, err := resp.Parse(cmd, resp.Limits{})
	if err != nil || len(v.Elems) < 3 {
		return q, false
	}
	args := v.Elems[2:]
	switch {
	case len(args) == 3 && bytes.EqualFold(args[0].Str, []byte("SLOTSRANGE")):
		return q, true
	case len(args) >= 2 && bytes.EqualFold(args[0].Str, []byte("ORDERBY")):
		q.orderBy, q.limit = bytes.ToLower(args[1].Str), 16384
		for i := 2; i < len(args); i++ {
			switch a := args[i].Str; {
			case bytes.EqualFold(a, []byte("LIMIT")) && i+1 < len(args):
				n, err := strconv.Atoi(string(args[i+1].Str))
				if err != nil || n < 1 {
					return q, false
				}
				q.limit = n
				i++
			case bytes.EqualFold(a, []byte("ASC")):
				q.asc = true
			case bytes.EqualFold(a, []byte("DESC")):
				q.asc = false
			default:
				return q, false
			}
		}
		return q, true
	}
	return q, false
}

// mergeSlotStats merges the primaries' CLUSTER SLOT-STATS replies (cmd
// the command) into the reply one node serving every slot would give:
// for SLOTSRANGE the union of their entries in slot order; for ORDERBY
// metric LIMIT n the n first of their entries (each node's own first n)
// ordered by the metric, descending unless ASC, ties in slot order, as
// each node orders its own. ok false (the replies are then combined as
// the table says) when a reply is not an array of [slot, stats] entries
// or the command is not one the servers accept.
func mergeSlotStats(cmd []byte, vals []resp.Value) (resp.Value, bool) {
	q, ok := parseSlotStats(cmd)
	if !ok {
		return resp.Value{}, false
	}
	n := 0
	for _, v := range vals {
		if v.IsError() {
			return v, true
		}
		if v.Type != resp.Array {
			return resp.Value{}, false
		}
		for _, e := range v.Elems {
			if e.Type != resp.Array || len(e.Elems) != 2 || e.Elems[0].Type != resp.Integer {
				return resp.Value{}, false
			}
		}
		n += len(v.Elems)
	}
	out := make([]resp.Value, 0, n)
	for _, v := range vals {
		out = append(out, v.Elems...)
	}
	slot := func(e resp.Value) int64 { return e.Elems[0].Int }
	if q.orderBy == nil {
		slices.SortStableFunc(out, func(a, b resp.Value) int { return cmp.Compare(slot(a), slot(b)) })
		return resp.Value{Type: resp.Array, Elems: out}, true
	}
	metric := func(e resp.Value) int64 {
		m := e.Elems[1]
		for i := 0; i+1 < len(m.Elems); i += 2 {
			if bytes.EqualFold(m.Elems[i].Str, q.orderBy) {
				return m.Elems[i+1].Int
			}
		}
		return 0
	}
	slices.SortStableFunc(out, func(a, b resp.Value) int {
		c := cmp.Compare(metric(a), metric(b))
		if !q.asc {
			c = -c
		}
		if c == 0 {
			c = cmp.Compare(slot(a), slot(b))
		}
		return c
	})
	if len(out) > q.limit {
		out = out[:q.limit]
	}
	return resp.Value{Type: resp.Array, Elems: out}, true
}
