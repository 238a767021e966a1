package kv

import (
	"strings"
	"testing"
	"time"
)

// Durations in milliseconds are rounded up, as package cmds rounds them:
// a TTL or a BLOCK is never sent shorter than asked (SET's PX, built by
// the cmds builder behind every helper).
func TestArgMillisRoundsUp(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{time.Nanosecond, "1"},
		{time.Millisecond, "1"},
		{1500 * time.Microsecond, "2"},
		{1999 * time.Microsecond, "2"},
		{2 * time.Millisecond, "2"},
		{1500 * time.Millisecond, "1500"},
	} {
		var b kb
		got := string(SetOptions{TTL: c.d}.set(b.Set("k", "v")).Build().Cmd().Bytes())
		want := "$2\r\nPX\r\n$" + string(rune('0'+len(c.want))) + "\r\n" + c.want + "\r\n"
		if !strings.HasSuffix(got, want) {
			t.Errorf("SET with TTL %v = %q, want it to end %q", c.d, got, want)
		}
	}
}
