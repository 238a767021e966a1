package emqmodule

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/stretchr/testify/require"
)

// TestUnloadFrees: MODULE LOAD, work that fills the module's key cache
// and number strings, MODULE UNLOAD, over and over: the server's memory
// stays where the first cycles left it (the module frees at unload every
// string it made).
func TestUnloadFrees(t *testing.T) {
	so := Need(t, "")
	srv := startServer(t, "", servertest.Options{Args: []string{"--enable-module-command", "yes"}})
	s := newSideNoFlush(t, "server", srv.Addr)
	q := qk("unload")
	p, a, _, _ := q.sets()
	cycle := func(c int) {
		s.must(t, "MODULE", "LOAD", so)
		s.must(t, "SET", "{emq}:version", "echomq:6.0.0")
		for b := 0; b < 3; b++ {
			var args []string
			for i := 0; i < 1000; i++ {
				id := fmt.Sprintf("JOB%04d%07d", c, b*1000+i)
				args = append(args, id, "p")
			}
			s.run(t, true, "enqueue_batch", []string{p, q.base()}, args)
			s.run(t, true, "claim_batch", []string{p, a, q.base()}, []string{"500000000", "300"})
		}
		s.must(t, "FLUSHALL", "SYNC") // Valkey 8 flushes lazily by default: a background free would land in either reading
		s.must(t, "MODULE", "UNLOAD", "emq")
	}
	used := func() int64 {
		for _, line := range strings.Split(s.must(t, "INFO", "memory").Text(), "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				require.NoError(t, err)
				return n
			}
		}
		t.Fatal("no used_memory")
		return 0
	}
	cycle(0)
	cycle(1)
	base := used()
	const cycles = 10
	for c := 2; c < 2+cycles; c++ {
		cycle(c)
	}
	grown := used() - base
	t.Logf("used_memory after 2 cycles %d, after %d more %+d bytes", base, cycles, grown)
	require.Less(t, grown, int64(cycles*4<<10), "memory grows cycle after cycle")
}
