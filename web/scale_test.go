package web

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// moveScript moves ARGV[2] ids from the head of pending to the set
// KEYS[2] ("dead" or "delayed"), scored from ARGV[3] on, with the row's
// state and error set: the scale test's setup only, never the
// dashboard's.
const moveScript = `
local ids = redis.call('ZPOPMIN', KEYS[1], tonumber(ARGV[2]))
local base = tonumber(ARGV[3])
local n = 0
for i = 1, #ids, 2 do
  local id = ids[i]
  redis.call('HSET', KEYS[3] .. 'job:' .. id, 'state', ARGV[1], 'attempts', '1', 'error', 'boom ' .. (n % 7))
  redis.call('ZADD', KEYS[2], base + n, id)
  n = n + 1
end
return n`

// TestScaleMillion (EMQ_WEB_SCALE=1; run it without -race): with
// 1,000,000 jobs in a queue (800,000 pending, 100,000 dead, 100,000
// delayed), every page answers in under 100 ms and SLOWLOG records
// nothing at its default threshold (10 ms): no page runs an O(N)
// command.
func TestScaleMillion(t *testing.T) {
	if os.Getenv("EMQ_WEB_SCALE") == "" {
		t.Skip("EMQ_WEB_SCALE=1 loads 1,000,000 jobs (about a minute): skipped")
	}
	f := newFixture(t, Options{StatsTTL: time.Second}, "big")
	const total = 1_000_000
	payloads := make([][]byte, 10_000)
	for i := range payloads {
		payloads[i] = []byte(`{"n":` + strconv.Itoa(i) + `,"to":"someone@example.com"}`)
	}
	t0 := time.Now()
	for range total / len(payloads) {
		if _, err := f.q.EnqueueBulk(tctx(t), payloads); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now().UnixMilli()
	for _, mv := range []struct {
		set  string
		base int64
	}{{"dead", now - 100_000}, {"delayed", now + 3_600_000}} {
		for range 20 {
			if _, err := srv.Do("EVAL", moveScript, "3", "emq:{big}:pending", "emq:{big}:"+mv.set, "emq:{big}:",
				mv.set, "5000", strconv.FormatInt(mv.base, 10)); err != nil {
				t.Fatal(err)
			}
			mv.base += 5000
		}
	}
	t.Logf("loaded %d jobs in %v", total, time.Since(t0).Round(time.Millisecond))
	if got, _ := srv.Do("ZCARD", "emq:{big}:pending"); got != "800000" {
		t.Fatalf("pending %s", got)
	}
	mid := func(set string) string {
		r, err := srv.Do("ZRANGE", "emq:{big}:"+set, "50000", "50000", "WITHSCORES")
		if err != nil {
			t.Fatal(err)
		}
		p := strings.Fields(r)
		return p[1] + "." + p[0]
	}
	id := strings.Fields(mustDo(t, "ZRANGE", "emq:{big}:pending", "400000", "400000"))[0]
	deadID := strings.Fields(mustDo(t, "ZRANGE", "emq:{big}:dead", "99999", "99999"))[0]
	pages := []string{
		"/", "/api/overview", "/api/queues/big",
		"/queues/big", "/queues/big?state=pending&after=0." + id, "/queues/big?state=pending&before=0." + id,
		"/queues/big?state=dead", "/queues/big?state=dead&after=" + mid("dead"), "/queues/big?state=dead&before=" + mid("dead"),
		"/queues/big?state=delayed&after=" + mid("delayed"), "/queues/big?state=active",
		"/queues/big?state=pending&n=200&after=0." + id,
		"/queues/big/dead", "/queues/big/dead?prefix=nomatch", "/queues/big/dead?prefix=boom+3&older=1s",
		"/queues/big/jobs/" + id, "/queues/big/jobs/" + deadID, "/queues/big/jobs/" + id + "/payload",
		"/queues/big/chart.svg",
		// The job system's pages: a sample, a lookup, bounded lists.
		"/queues/big/types", "/queues/big/schedules", "/queues/big/uniques?key=k", "/queues/big/workers",
		"/queues/big/limits", "/queues/big/lanes", "/queues/big/flows",
	}
	mustDo(t, "CONFIG", "SET", "slowlog-log-slower-than", "10000") // the default, 10 ms
	mustDo(t, "SLOWLOG", "RESET")
	for _, p := range pages {
		// Twice: the first read of a queue opens it (COMMAND INFO,
		// the fence) and loads the stats script.
		for i := range 2 {
			start := time.Now()
			code, body, _ := f.get(p)
			d := time.Since(start)
			if code != 200 {
				t.Fatalf("%s: %d %s", p, code, clip(body, 200))
			}
			if i == 1 {
				t.Logf("%-60s %6.1f ms  %7d bytes", p, float64(d.Microseconds())/1000, len(body))
				if d > 100*time.Millisecond {
					t.Errorf("%s took %v", p, d)
				}
			}
		}
	}
	if n := mustDo(t, "SLOWLOG", "LEN"); n != "0" {
		t.Errorf("SLOWLOG holds %s entries: %s", n, mustDo(t, "SLOWLOG", "GET", "10"))
	}
}

func mustDo(t *testing.T, args ...string) string {
	t.Helper()
	r, err := srv.Do(args...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
