package emq

import (
	"math"
	"time"
)

// Durations and counts on the wire.
//
// The scripts take their integer arguments (lease_ms, delay_ms,
// retention_ms, max_age_ms, limits, max attempts) as exact integers of at
// most 2^53 - 1, the largest a Lua number (a double) holds exactly, and
// refuse any other with EMQARG: one such argument refuses the whole call,
// a settle_claim round with every outcome it carries. So no argument
// leaves this package out of that range:
//
//   - A duration is sent as whole milliseconds, rounded up, computed
//     without overflow: the longest time.Duration, math.MaxInt64 ns (about
//     292 years), is 9,223,372,036,855 ms, a thousandth of 2^53. Every
//     time.Duration has its exact rendering, and the times the scripts
//     reckon from one (a lease deadline, a due time: the server's clock
//     plus it, about 1.1e13 ms at most this century) stay exact doubles.
//   - A negative delay (EnqueueIn, a retry's) is due at once: 0. A
//     negative retention or age is an *[ArgError], as is a lease under a
//     millisecond: refused before anything is sent.
//   - A count or limit above 2^53 - 1 is sent as 2^53 - 1: no queue holds
//     that many jobs, nor does a job reach that many attempts, so the
//     meaning is the same.

// millis converts d to whole milliseconds, rounding up, for an ARGV
// integer; a negative d is an *ArgError unless clamp is set, when it is 0.
// It never overflows: every time.Duration is at most 9,223,372,036,855 ms,
// well within a script's exact integers.
func millis(arg string, d time.Duration, clamp bool) (int64, error) {
	if d < 0 {
		if clamp {
			return 0, nil
		}
		return 0, &ArgError{Arg: arg, Reason: "negative duration " + d.String()}
	}
	ms := int64(d / time.Millisecond)
	if d%time.Millisecond != 0 {
		ms++
	}
	return ms, nil
}

// leaseMillis converts a lease to whole milliseconds, at least 1.
func leaseMillis(d time.Duration) (int64, error) {
	if d < time.Millisecond {
		return 0, &ArgError{Arg: "lease", Reason: d.String() + " is under a millisecond"}
	}
	return millis("lease", d, false)
}

// scriptInt returns a count already checked non-negative as a script
// argument: at most maxScriptInt, which means the same as any more.
func scriptInt(n int) int64 { return min(int64(n), maxScriptInt) }

// twice returns 2d, at most limit, without overflow.
func twice(d, limit time.Duration) time.Duration {
	if d > limit/2 {
		return limit
	}
	return 2 * d
}

// scale returns d times f (f >= 0), saturating at the longest duration.
func scale(d time.Duration, f float64) time.Duration {
	x := float64(d) * f
	if x >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(x)
}
