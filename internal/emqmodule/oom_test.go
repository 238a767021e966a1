package emqmodule

import (
	"testing"
)

// TestOOM: at maxmemory with noeviction each transition does what its
// script does, reply and dataset: a script (no shebang, so no flags) is
// refused only at its first write that could grow memory (HSET, ZADD)
// when no write came before it; a write that frees (ZREM, ZPOPMIN, DEL)
// goes first in claim, complete, retry, promote and the batch claims,
// which therefore run; enqueues of new jobs, extend and completions with
// a retention are refused; a duplicate, a bad kind or a bad argument
// answers what it answers without the limit.
func TestOOM(t *testing.T) {
	s, n := pair(t)
	scr, nat := newSide(t, "script", s.Addr, false), newSide(t, "module", n.Addr, true)
	t.Cleanup(func() {
		scr.raw(t, "CONFIG", "SET", "maxmemory", "0")
		nat.raw(t, "CONFIG", "SET", "maxmemory", "0")
	})
	onBoth(t, scr, nat, "CONFIG", "SET", "maxmemory-policy", "noeviction")
	q := qk("oom")
	p, a, d, x := q.sets()
	ja, jb, jc, jd := "JOB0000000000A", "JOB0000000000B", "JOB0000000000C", "JOB0000000000D"
	// The state: A and B claimed (token 1), C pending, D delayed and due.
	setup := func() {
		onBoth(t, scr, nat, "CONFIG", "SET", "maxmemory", "0")
		onBoth(t, scr, nat, "DEL", p, a, d, x, q.row(ja), q.row(jb), q.row(jc), q.row(jd), q.row("JOB0000000000E"))
		for _, id := range []string{ja, jb, jc} {
			onBoth(t, scr, nat, "HSET", q.row(id), "state", "pending", "attempts", "0", "payload", "p"+id)
			onBoth(t, scr, nat, "ZADD", p, "0", id)
		}
		bothN(t, scr, nat, step{"claim_batch", []string{p, a, q.base()}, []string{"500000000", "2"}, ""})
		onBoth(t, scr, nat, "HSET", q.row(jd), "state", "delayed", "attempts", "0", "payload", "pd")
		onBoth(t, scr, nat, "ZADD", d, "1", jd)
		onBoth(t, scr, nat, "CONFIG", "SET", "maxmemory", "1")
	}
	const oom = `ERR("OOM command not allowed when used memory > 'maxmemory'.")`
	steps := []step{
		{"enqueue", []string{q.row("JOB0000000000E"), p}, []string{"JOB0000000000E", "x"}, oom},
		{"enqueue", []string{q.row(ja), p}, []string{ja, "x"}, "0"},
		{"enqueue", []string{q.row("XOB0000000000E"), p}, []string{"XOB0000000000E", "x"}, `ERR("EMQKIND job id must be JOB-namespaced")`},
		{"enqueue_at", []string{q.row("JOB0000000000E"), d}, []string{"JOB0000000000E", "x", "5"}, oom},
		{"enqueue_at", []string{q.row("JOB0000000000E"), d}, []string{"JOB0000000000E", "x", "-5"}, `ERR("EMQARG delay_ms must be an integer >= 0")`},
		{"enqueue_at", []string{q.row(ja), d}, []string{ja, "x", "5"}, "0"},
		{"enqueue_batch", []string{p, q.base()}, []string{ja, "x", jb, "y"}, "[0 0]"},
		{"enqueue_batch", []string{p, q.base()}, []string{ja, "x", "JOB0000000000E", "y"}, oom},
		{"enqueue_batch", []string{p, q.base()}, []string{ja, "x", "XOB", "y"}, `ERR("EMQKIND job id must be JOB-namespaced")`},
		{"enqueue_batch", []string{p, q.base()}, []string{ja}, `ERR("EMQARG ids and payloads must come in pairs")`},
		{"claim", []string{p, a, q.base()}, []string{"500000000"}, ""},
		{"claim_batch", []string{p, a, q.base()}, []string{"500000000", "5"}, ""},
		{"complete", []string{a, q.row(ja)}, []string{ja, "1", "0"}, "1"},
		{"complete", []string{a, q.row(ja)}, []string{ja, "1", "500000000"}, "1"},
		{"complete", []string{a, q.row(ja)}, []string{ja, "2", "0"}, "0"},
		{"complete_batch", []string{a, q.base()}, []string{"0", ja, "1", jb, "1"}, "[1 1]"},
		{"complete_batch", []string{a, q.base()}, []string{"500000000", ja, "1", jb, "1"}, oom},
		{"complete_batch", []string{a, q.base()}, []string{"500000000", ja, "7", jb, "7"}, "[0 0]"},
		{"retry", []string{a, q.row(ja), p, d, x}, []string{ja, "1", "0", "3", "e"}, "1"},
		{"retry", []string{a, q.row(ja), p, d, x}, []string{ja, "1", "500000000", "3", "e"}, "1"},
		{"retry", []string{a, q.row(ja), p, d, x}, []string{ja, "1", "0", "1", "e"}, "2"},
		{"extend", []string{a, q.row(ja)}, []string{ja, "1", "600000000"}, oom},
		{"extend", []string{a, q.row(ja)}, []string{ja, "5", "600000000"}, "0"},
		{"extend", []string{a, q.row(ja)}, []string{ja, "1", "0"}, `ERR("EMQARG lease_ms must be an integer >= 1")`},
		{"promote", []string{d, p, q.base()}, []string{"10"}, "1"},
		{"settle_claim", []string{p, a, d, x, q.base()}, []string{"500000000", "5", "0", "2", "0", "0", ja, "1", jb, "1"}, ""},
		{"settle_claim", []string{p, a, d, x, q.base()}, []string{"500000000", "5", "500000000", "2", "0", "0", ja, "1", jb, "1"}, oom},
		{"settle_claim", []string{p, a, d, x, q.base()}, []string{"500000000", "5", "500000000", "1", "0", "0", ja, "9"}, ""},
		{"settle_claim", []string{p, a, d, x, q.base()}, []string{"500000000", "0", "500000000", "0", "1", "1", ja, "1", "0", "3", "e", jb, "1"}, "[[1 1] []]"},
		{"settle_claim", []string{p, a, d, x, q.base()}, []string{"500000000", "0", "0", "0", "0", "0"}, "[[] []]"},
		{"settle_claim", []string{p, a, d, x, q.base()}, []string{"0", "0", "0", "0", "0", "0"}, `ERR("EMQARG lease_ms must be an integer >= 1")`},
	}
	for _, st := range steps {
		setup()
		got := bothN(t, scr, nat, st)
		sameFast(t, scr, nat, st.name+" "+got)
	}
}
