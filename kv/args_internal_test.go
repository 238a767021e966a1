package kv

import (
	"testing"
	"time"

	"github.com/echomq/echomq-go/resp"
)

// Durations in milliseconds are rounded up, as package cmds rounds them:
// a TTL or a BLOCK is never sent shorter than asked.
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
		got := string(argMillis(resp.BuildCommand(nil, 2).Arg("PX"), c.d).Cmd().Bytes())
		want := "*2\r\n$2\r\nPX\r\n$" + string(rune('0'+len(c.want))) + "\r\n" + c.want + "\r\n"
		if got != want {
			t.Errorf("argMillis(%v) = %q, want %q", c.d, got, want)
		}
	}
}
