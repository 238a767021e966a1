package cluster

import (
	"testing"

	"github.com/echomq/echomq-go/resp"
)

// mergeSlotStats: an error reply of any primary is the reply; replies
// not of the documented shape, or a command the servers refuse, are
// left to the table's policy (ok false).
func TestMergeSlotStatsEdges(t *testing.T) {
	entry := func(slot, keys int64) resp.Value {
		return resp.Value{Type: resp.Array, Elems: []resp.Value{
			{Type: resp.Integer, Int: slot},
			{Type: resp.Map, Elems: []resp.Value{{Type: resp.BulkString, Str: []byte("key-count")}, {Type: resp.Integer, Int: keys}}},
		}}
	}
	arr := func(es ...resp.Value) resp.Value { return resp.Value{Type: resp.Array, Elems: es} }
	cmd := func(args ...string) []byte { return resp.AppendCommand(nil, args...) }
	ok := arr(entry(7, 1))
	bad := resp.Value{Type: resp.Error, Str: []byte("ERR Unrecognized sort metric for ORDERBY.")}
	if v, done := mergeSlotStats(cmd("CLUSTER", "SLOT-STATS", "ORDERBY", "x"), []resp.Value{ok, bad}); !done || !v.IsError() {
		t.Errorf("an error reply: %v %v", v, done)
	}
	for _, c := range []struct {
		cmd  []byte
		vals []resp.Value
	}{
		{cmd("CLUSTER", "SLOT-STATS", "SLOTSRANGE", "0"), []resp.Value{ok}},                         // cut short
		{cmd("CLUSTER", "SLOT-STATS", "ORDERBY", "key-count", "LIMIT", "0"), []resp.Value{ok}},      // LIMIT under 1
		{cmd("CLUSTER", "SLOT-STATS", "ORDERBY", "key-count", "SIDEWAYS"), []resp.Value{ok}},        // no such option
		{cmd("CLUSTER", "SLOT-STATS", "SLOTSRANGE", "0", "9"), []resp.Value{ok, {Type: resp.Null}}}, // not an array
		{cmd("CLUSTER", "SLOT-STATS", "SLOTSRANGE", "0", "9"), []resp.Value{arr(arr(entry(1, 1)))}}, // not [slot, stats]
	} {
		if _, done := mergeSlotStats(c.cmd, c.vals); done {
			t.Errorf("%q: merged", c.cmd)
		}
	}
	// ORDERBY with ties: the slot order, as a node orders its own; LIMIT
	// cuts the merged list, lower-case options too.
	v, done := mergeSlotStats(cmd("cluster", "slot-stats", "orderby", "KEY-COUNT", "limit", "3", "asc"),
		[]resp.Value{arr(entry(9, 0), entry(10, 2)), arr(entry(3, 0), entry(4, 1))})
	if !done || len(v.Elems) != 3 || v.Elems[0].Elems[0].Int != 3 || v.Elems[1].Elems[0].Int != 9 || v.Elems[2].Elems[0].Int != 4 {
		t.Errorf("ORDERBY … ASC with ties: %v %v", v, done)
	}
}
