package resp

import (
	"errors"
	"math"
	"testing"
)

// TestAsFloat folds RESP2's number text and RESP3's double to one
// float64, and refuses text that is not a number with an error (Float
// returns 0 for it, silently).
func TestAsFloat(t *testing.T) {
	parse := func(s string) Value {
		v, _, err := Parse([]byte(s), Limits{})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range []struct {
		wire string
		want float64
	}{
		{"$4\r\n30.5\r\n", 30.5},
		{",30.5\r\n", 30.5},
		{"+30.5\r\n", 30.5},
		{":42\r\n", 42},
		{"$2\r\n-7\r\n", -7},
		{"$3\r\ninf\r\n", math.Inf(1)},
		{"$4\r\n-inf\r\n", math.Inf(-1)},
		{",inf\r\n", math.Inf(1)},
		{",-inf\r\n", math.Inf(-1)},
		{"$6\r\n1.5e10\r\n", 1.5e10},
		{"(12345678901234567890\r\n", 12345678901234567890},
		{"=8\r\ntxt:0.25\r\n", 0.25},
	} {
		got, err := parse(c.wire).AsFloat()
		if err != nil || got != c.want {
			t.Errorf("%q: %v, %v; want %v", c.wire, got, err, c.want)
		}
	}
	for _, w := range []string{"$3\r\nnan\r\n", ",nan\r\n"} {
		if got, err := parse(w).AsFloat(); err != nil || !math.IsNaN(got) {
			t.Errorf("%q: %v, %v; want NaN", w, got, err)
		}
	}
	for _, w := range []string{"$3\r\nabc\r\n", "$0\r\n\r\n", "$4\r\n0x10\r\n", "$3\r\n1,5\r\n", "$8\r\nInfinity\r\n", "$4\r\n 1.5\r\n"} {
		got, err := parse(w).AsFloat()
		if !errors.Is(err, ErrNotNumber) || got != 0 {
			t.Errorf("%q: %v, %v; want ErrNotNumber", w, got, err)
		}
		if parse(w).Float() != 0 {
			t.Errorf("%q: Float is not 0", w)
		}
	}
	var te *TypeError
	for _, w := range []string{"_\r\n", "*1\r\n:1\r\n", "#t\r\n"} {
		if _, err := parse(w).AsFloat(); !errors.As(err, &te) {
			t.Errorf("%q: %v; want a *TypeError", w, err)
		}
	}
	var se *ServerError
	if _, err := parse("-ERR value is not a valid float\r\n").AsFloat(); !errors.As(err, &se) {
		t.Errorf("error reply: %v; want a *ServerError", err)
	}
	// The number read costs nothing.
	v := parse("$4\r\n30.5\r\n")
	if n := testing.AllocsPerRun(100, func() { _, _ = v.AsFloat() }); n != 0 {
		t.Errorf("AsFloat allocates %v times", n)
	}
}
