package emqmodule

import (
	"fmt"
	"strings"
	"testing"
)

// attemptsEdges are attempts texts at and past the edges of a double's
// integers, negative ones, and texts that are no integer: what a row
// written by hand, or by a client of another language, may hold.
var attemptsEdges = []string{
	"9007199254740991", "9007199254740992", "9007199254740993", "9223372036854775806", "9223372036854775807",
	"-1", "-9007199254740993", "-9223372036854775808", "0", "99999999999999", "999999999999999", "1000000000000000",
	"1.5", "abc", "", " 7", "0x10", "1e3", "007", "18446744073709551616",
}

// TestAttemptsIntegers: every transition that reads or writes attempts
// (the claims, and the token of complete, complete_batch, retry, extend
// and settle_claim) answers and stores what the script does, byte for
// byte, at attempts from 2^53 - 1 to 2^63 - 1, negative, and not an
// integer: claim's HINCRBY stores the exact integer and replies it
// through a Lua number (a double); the batch claims store and reply the
// double's "%d"; a token holds only as the decimal text of an attempts
// within 2^53. A claim of a row whose attempts is no integer fails on
// both (HINCRBY's error), the script after its pop: that dataset is not
// compared (module/README.md).
func TestAttemptsIntegers(t *testing.T) {
	s, n := pair(t)
	scr, nat := newSide(t, "script", s.Addr, false), newSide(t, "module", n.Addr, true)
	q := qk("ints")
	p, a, d, x := q.sets()
	id := "JOB0000000000A"
	row := q.row(id)
	reset := func(state, attempts string) {
		for _, sd := range []*side{scr, nat} {
			sd.must(t, "DEL", row, p, a, d, x)
			sd.must(t, "HSET", row, "state", state, "attempts", attempts, "payload", "pa")
			if state == "pending" {
				sd.must(t, "ZADD", p, "0", id)
			} else {
				sd.must(t, "ZADD", a, "500000000000000", id)
			}
		}
	}
	claims := []step{
		{"claim", []string{p, a, q.base()}, []string{"500000000"}, ""},
		{"claim_batch", []string{p, a, q.base()}, []string{"500000000", "3"}, ""},
		{"settle_claim", []string{p, a, d, x, q.base()}, []string{"500000000", "3", "0", "0", "0", "0"}, ""},
	}
	for _, at := range attemptsEdges {
		for _, st := range claims {
			reset("pending", at)
			got := bothN(t, scr, nat, st)
			if st.name == "claim" && strings.HasPrefix(got, "ERR(") {
				continue // HINCRBY's error: the script popped before it; the module refuses first
			}
			sameFast(t, scr, nat, fmt.Sprintf("%s of attempts %q -> %s", st.name, at, got))
		}
		// The token, as each executor's claim would have given it and as
		// the text itself.
		for _, tok := range []string{at, tokenOf(at)} {
			held := []step{
				{"complete", []string{a, row}, []string{id, tok, "0"}, ""},
				{"complete", []string{a, row}, []string{id, tok, "500000000"}, ""},
				{"complete_batch", []string{a, q.base()}, []string{"0", id, tok}, ""},
				{"retry", []string{a, row, p, d, x}, []string{id, tok, "0", "3", "e"}, ""},
				{"retry", []string{a, row, p, d, x}, []string{id, tok, "500000000", "9223372036854775807", "e"}, ""},
				{"extend", []string{a, row}, []string{id, tok, "600000000"}, ""},
				{"settle_claim", []string{p, a, d, x, q.base()}, []string{"500000000", "0", "0", "1", "0", "0", id, tok}, ""},
				{"settle_claim", []string{p, a, d, x, q.base()}, []string{"500000000", "0", "0", "0", "1", "0", id, tok, "0", "2", "e"}, ""},
				{"settle_claim", []string{p, a, d, x, q.base()}, []string{"500000000", "1", "0", "0", "0", "1", id, tok}, ""},
			}
			for _, st := range held {
				reset("active", at)
				got := bothN(t, scr, nat, st)
				sameFast(t, scr, nat, fmt.Sprintf("%s %q of attempts %q -> %s", st.name, st.args, at, got))
			}
		}
	}
}

// tokenOf is the decimal text of a Lua number made from s, as a claim
// reply would carry it ("" when s is no number).
func tokenOf(s string) string {
	var f float64
	if _, err := fmt.Sscan(s, &f); err != nil {
		return ""
	}
	return fmt.Sprintf("%d", int64(f))
}
