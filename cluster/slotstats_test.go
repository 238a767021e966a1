package cluster_test

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/cluster"
	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/internal/slot"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/resp"
)

// slotStat is one entry of a CLUSTER SLOT-STATS reply: a slot and its
// key-count.
type slotStat struct {
	slot, keys int64
}

// slotStats reads a CLUSTER SLOT-STATS reply: [[slot, {key-count: n, …}], …].
func slotStats(t *testing.T, v resp.Value) []slotStat {
	t.Helper()
	require.Equal(t, resp.Array, v.Type, "reply %v", v)
	out := make([]slotStat, 0, len(v.Elems))
	for _, e := range v.Elems {
		require.Len(t, e.Elems, 2, "entry %v", e)
		st := slotStat{slot: e.Elems[0].Int, keys: -1}
		m := e.Elems[1].Elems
		for i := 0; i+1 < len(m); i += 2 {
			if m[i].Equal("key-count") {
				st.keys = m[i+1].Int
			}
		}
		require.GreaterOrEqual(t, st.keys, int64(0), "entry %v has no key-count", e)
		out = append(out, st)
	}
	return out
}

// sameStats fails unless got is want, naming the first difference (the
// replies run to 16,384 entries).
func sameStats(t *testing.T, want, got []slotStat, what string, a ...any) {
	t.Helper()
	for i := range min(len(want), len(got)) {
		if want[i] != got[i] {
			t.Fatalf("%s: entry %d is %+v, want %+v (%d entries, want %d)", fmt.Sprintf(what, a...), i, got[i], want[i], len(got), len(want))
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%s: %d entries, want %d", fmt.Sprintf(what, a...), len(got), len(want))
	}
}

// needSlotStats skips, naming why, on a server without CLUSTER
// SLOT-STATS (Redis 7.0.15; Valkey before 8.0).
func needSlotStats(t *testing.T, c *servertest.Cluster) {
	t.Helper()
	s := c.Primaries[0]
	major, _, _ := strings.Cut(s.Version, ".")
	if n, _ := strconv.Atoi(major); s.Name != "valkey" || n < 8 {
		t.Skipf("CLUSTER SLOT-STATS is Valkey 8.0's; %s %s lacks it", s.Name, s.Version)
	}
}

// CLUSTER SLOT-STATS is answered by each node for its own slots: the
// Client sends it to every primary and merges their replies into the one
// a node serving every slot would give. Keys are put in slots of every
// primary (a distinct count per slot), and the merged replies are
// compared with what each node answers directly (SLOTSRANGE over all the
// slots, on each node): SLOTSRANGE is the union in slot order; ORDERBY
// key-count LIMIT n is the n first of every slot's, by count (DESC, or
// ASC), ties in slot order.
func TestSlotStatsMerged(t *testing.T) {
	c := needCluster(t)
	needSlotStats(t, c)
	cl := newClient(t, c)
	ctx := testCtx(t)

	// Two hashtags on each primary, each of its own slot, the j-th
	// holding j+1 keys.
	var tags []string
	per, seen := map[string]int{}, map[uint16]bool{}
	for i := 0; len(tags) < 2*len(c.Primaries); i++ {
		tag := "ss" + strconv.Itoa(i)
		owner, sl := cl.Owner("{"+tag+"}"), slot.Of(tag)
		if owner == "" || per[owner] == 2 || seen[sl] {
			continue
		}
		per[owner]++
		seen[sl] = true
		tags = append(tags, tag)
	}
	want := map[int64]int64{} // slot → keys written
	for j, tag := range tags {
		for k := range j + 1 {
			_, err := cl.Do(ctx, "SET", fmt.Sprintf("{%s}%d", tag, k), "v")
			require.NoError(t, err)
		}
		want[int64(slot.Of(tag))] = int64(j + 1)
	}

	// Each node, asked directly, answers for its own slots.
	all := map[int64]slotStat{}
	for _, p := range c.Primaries {
		nc, err := conn.Dial(ctx, conn.Options{Addr: p.Addr})
		require.NoError(t, err)
		v, err := nc.Do(ctx, "CLUSTER", "SLOT-STATS", "SLOTSRANGE", "0", "16383")
		nc.Close()
		require.NoError(t, err)
		own := slotStats(t, v)
		require.NotEmpty(t, own, "%s answers for no slot", p.Addr)
		require.Less(t, len(own), 16384, "%s answers for every slot", p.Addr)
		for _, st := range own {
			_, dup := all[st.slot]
			require.False(t, dup, "slot %d answered by two nodes", st.slot)
			all[st.slot] = st
		}
	}
	require.Len(t, all, 16384, "the nodes' answers do not cover every slot")
	for sl, n := range want {
		require.Equal(t, n, all[sl].keys, "slot %d's key-count as its node answers", sl)
	}
	// every is the nodes' answers in slot order: the oracle.
	var every []slotStat
	for _, st := range all {
		every = append(every, st)
	}
	slices.SortFunc(every, func(a, b slotStat) int { return cmp.Compare(a.slot, b.slot) })
	ordered := func(asc bool, limit int) []slotStat {
		out := slices.Clone(every)
		slices.SortStableFunc(out, func(a, b slotStat) int {
			c := cmp.Compare(a.keys, b.keys)
			if !asc {
				c = -c
			}
			return cmp.Or(c, cmp.Compare(a.slot, b.slot))
		})
		return out[:min(limit, len(out))]
	}

	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			cl := newClient(t, c, func(o *cluster.Options) { o.Node.Protocol = proto })
			do := func(args ...string) []slotStat {
				t.Helper()
				a := []any{"CLUSTER", "SLOT-STATS"}
				for _, x := range args {
					a = append(a, x)
				}
				v, err := cl.Do(ctx, a...)
				require.NoError(t, err, "%q", args)
				return slotStats(t, v)
			}

			// SLOTSRANGE: the union, in slot order.
			sameStats(t, every, do("SLOTSRANGE", "0", "16383"), "SLOTSRANGE 0 16383")
			lo, hi := int64(16383), int64(0)
			for sl := range want {
				lo, hi = min(lo, sl), max(hi, sl)
			}
			sameStats(t, every[lo:hi+1], do("SLOTSRANGE", strconv.FormatInt(lo, 10), strconv.FormatInt(hi, 10)),
				"SLOTSRANGE %d %d, over every primary's slots", lo, hi)

			// ORDERBY key-count LIMIT n DESC: the n fullest slots of the cluster.
			n := len(tags) - 2
			top := do("ORDERBY", "key-count", "LIMIT", strconv.Itoa(n), "DESC")
			sameStats(t, ordered(false, n), top, "ORDERBY key-count LIMIT %d DESC", n)
			for i, st := range top {
				require.Equal(t, int64(len(tags)-i), st.keys, "the %d-th fullest slot", i)
			}
			// DESC is the default.
			sameStats(t, top, do("ORDERBY", "key-count", "LIMIT", strconv.Itoa(n)), "ORDERBY key-count LIMIT %d", n)

			// ORDERBY key-count LIMIT n ASC, n over any one node's share: the
			// empty slots in slot order, then the fullest last.
			asc := do("ORDERBY", "key-count", "LIMIT", "16384", "ASC")
			sameStats(t, ordered(true, 16384), asc, "ORDERBY key-count LIMIT 16384 ASC")
			for i, st := range asc[len(asc)-len(tags):] {
				require.Equal(t, int64(i+1), st.keys, "ASC: the %d-th of the slots with keys", i)
			}
			sameStats(t, ordered(true, 7000), do("ORDERBY", "key-count", "LIMIT", "7000", "ASC"), "ORDERBY key-count LIMIT 7000 ASC")

			// Built with the typed builder, the same.
			var b cmds.Builder
			var got resp.Value
			err := cl.DoFunc(ctx, b.ClusterSlotStats().OrderBy("key-count").OrderByLimit(int64(n)).OrderByDesc().Build().Cmd(), func(v resp.Value) error {
				got = v.Clone()
				return nil
			})
			require.NoError(t, err)
			sameStats(t, top, slotStats(t, got), "the builder's ORDERBY key-count LIMIT %d DESC", n)

			// A metric the servers refuse: their error reply is the reply.
			_, err = cl.Do(ctx, "CLUSTER", "SLOT-STATS", "ORDERBY", "bogus-metric")
			var se *resp.ServerError
			require.ErrorAs(t, err, &se)
			require.Contains(t, err.Error(), "metric")

			// In a batch it would reach one node only: refused, nothing sent.
			var bt pipeline.Batch
			bt.Add("GET", "{"+tags[0]+"}0")
			bt.Add("CLUSTER", "SLOT-STATS", "SLOTSRANGE", "0", "16383")
			err = bt.Exec(ctx, cl)
			require.ErrorIs(t, err, cluster.ErrUnroutable)
			var re *cluster.RouteError
			require.ErrorAs(t, err, &re)
			require.Equal(t, "CLUSTER", re.Command)
		})
	}
}
