package cache

import "testing"

// parseSwaps reads the SWAPDB count of INFO commandstats, as Redis 7.0
// and Valkey 8.0 write it; a missing line is 0 calls.
func TestParseSwaps(t *testing.T) {
	for _, c := range []struct {
		info string
		want int64
	}{
		{"# Commandstats\r\ncmdstat_get:calls=3,usec=1\r\n", 0},
		{"# Commandstats\r\ncmdstat_swapdb:calls=7,usec=77,usec_per_call=11.00,rejected_calls=0,failed_calls=0\r\n", 7},
		{"cmdstat_xswapdb:calls=9,usec=1\r\ncmdstat_swapdb:calls=12,usec=1\r\n", 12},
		{"cmdstat_swapdb:calls=12", 12},
		{"cmdstat_swapdb:calls=,usec=1\r\n", -1},
		{"cmdstat_swapdb:calls=99999999999999999999999,usec=1\r\n", -1},
	} {
		if got := parseSwaps([]byte(c.info)); got != c.want {
			t.Errorf("parseSwaps(%q) = %d, want %d", c.info, got, c.want)
		}
	}
}
