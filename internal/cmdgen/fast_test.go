package main

import (
	"slices"
	"testing"
)

// TestFast: the shortcuts replace only the calls they stand for: B.at
// for a constructor's slots opened in order at its top level before any
// late run or other open; B.opt for an option's open and its token;
// B.secs and B.millis for durations in those units.
func TestFast(t *testing.T) {
	for _, tc := range []struct {
		name string
		ctor bool
		in   []string
		want []string
	}{
		{"constructor", true,
			[]string{"B.open(0, false)", "B.key(key)", "B.open(1, false)", "B.tok(\"X\")", "B.dur(d, Seconds)"},
			[]string{"B.at(0)", "B.key(key)", "B.at(1)", "B.tok(\"X\")", "B.secs(d)"}},
		{"after a late run", true,
			[]string{"B.open(0, false)", "B.key(key)", "B.later(2)", "B.str(x)", "B.open(3, false)", "B.dur(d, Milliseconds)"},
			[]string{"B.at(0)", "B.key(key)", "B.later(2)", "B.str(x)", "B.open(3, false)", "B.millis(d)"}},
		{"in a loop", true,
			[]string{"for _, x := range xs {", "B.open(0, false)", "B.str(x)", "}", "B.open(1, false)"},
			[]string{"for _, x := range xs {", "B.open(0, false)", "B.str(x)", "}", "B.open(1, false)"}},
		{"not in order", true,
			[]string{"B.open(1, false)", "B.open(0, false)", "B.open(2, false)"},
			[]string{"B.at(1)", "B.open(0, false)", "B.open(2, false)"}},
		{"multi", true,
			[]string{"B.open(0, true)", "B.open(1, false)"},
			[]string{"B.open(0, true)", "B.open(1, false)"}},
		{"option", false,
			[]string{"B.open(4, false)", "B.tok(\"EX\")", "B.dur(s, Seconds)", "B.timeoutDur(t, DecimalSeconds)"},
			[]string{"B.opt(4, false, \"EX\")", "B.secs(s)", "B.timeoutDur(t, DecimalSeconds)"}},
		{"option without a token first", false,
			[]string{"B.open(2, true)", "B.choose(2, 1)", "B.tok(\"A\")", "B.dur(s, DecimalSeconds)"},
			[]string{"B.open(2, true)", "B.choose(2, 1)", "B.tok(\"A\")", "B.dur(s, DecimalSeconds)"}},
	} {
		if got := fast(tc.in, tc.ctor); !slices.Equal(got, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

// TestOptionCode: every option method refuses a stale builder value
// before it writes anything: an option that starts with its slot and
// token has B.opt check the value's generation (and return staleGen),
// any other starts with Builder.stale.
func TestOptionCode(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []string
		want string
	}{
		{"a token", []string{"B.open(2, false)", "B.tok(\"NX\")"},
			"\tc.g = c.b.opt(c.g, 2, false, \"NX\")\n"},
		{"a token and a value", []string{"B.open(4, false)", "B.tok(\"EX\")", "B.dur(s, Seconds)"},
			"\tif c.g = c.b.opt(c.g, 4, false, \"EX\"); c.g == staleGen {\n\t\treturn c\n\t}\n\tc.b.secs(s)\n"},
		{"no token first", []string{"B.open(0, false)", "B.choose(0, 1)", "B.tok(\"ORDERBY\")", "B.str(m)"},
			"\tif c.b.stale(c.g) {\n\t\treturn T{c.b, staleGen}\n\t}\n\tc.b.open(0, false)\n\tc.b.choose(0, 1)\n\tc.b.tok(\"ORDERBY\")\n\tc.b.str(m)\n"},
		{"a token later", []string{"B.open(1, true)", "B.str(x)", "B.open(2, false)", "B.tok(\"A\")"},
			"\tif c.b.stale(c.g) {\n\t\treturn T{c.b, staleGen}\n\t}\n\tc.b.open(1, true)\n\tc.b.str(x)\n\tc.b.opt(c.g, 2, false, \"A\")\n"},
	} {
		if got := optionCode(tc.in, "T"); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}
