package cmdinfo_test

import (
	"testing"
	"time"

	. "github.com/echomq/echomq-go/internal/cmdinfo"
	"github.com/echomq/echomq-go/resp"
)

func TestInspect(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		kind    Kind
		name    string
		timeout time.Duration
	}{
		{[]string{"GET", "k"}, Plain, "GET", 0},
		{[]string{"blpop", "a", "b", "2.5"}, Blocking, "BLPOP", 2500 * time.Millisecond},
		{[]string{"BRPOP", "a", "0"}, Blocking, "BRPOP", 0},
		{[]string{"BLMOVE", "a", "b", "LEFT", "RIGHT", "1"}, Blocking, "BLMOVE", time.Second},
		{[]string{"BLMPOP", "3", "1", "a", "LEFT"}, Blocking, "BLMPOP", 3 * time.Second},
		{[]string{"BZMPOP", "0.1", "1", "z", "MIN"}, Blocking, "BZMPOP", 100 * time.Millisecond},
		{[]string{"BRPOPLPUSH", "a", "b", "7"}, Blocking, "BRPOPLPUSH", 7 * time.Second},
		{[]string{"WAIT", "1", "250"}, Blocking, "WAIT", 250 * time.Millisecond},
		{[]string{"WAITAOF", "1", "0", "100"}, Blocking, "WAITAOF", 100 * time.Millisecond},
		{[]string{"XREAD", "COUNT", "2", "BLOCK", "1500", "STREAMS", "s", "$"}, Blocking, "XREAD", 1500 * time.Millisecond},
		{[]string{"XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"}, Blocking, "XREADGROUP", 0},
		{[]string{"XREAD", "STREAMS", "BLOCK", "0"}, Plain, "XREAD", 0}, // stream named BLOCK
		{[]string{"XREAD", "COUNT", "1", "STREAMS", "s", "0"}, Plain, "XREAD", 0},
		{[]string{"BLPOP", "a", "soon"}, Blocking, "BLPOP", 0},
		{[]string{"CLIENT", "REPLY", "OFF"}, ReplyModel, "CLIENT REPLY", 0},
		{[]string{"client", "reply", "on"}, Plain, "CLIENT", 0},
		{[]string{"CLIENT", "ID"}, Plain, "CLIENT", 0},
		{[]string{"Subscribe", "x"}, ReplyModel, "SUBSCRIBE", 0},
		{[]string{"MULTI"}, Multi, "MULTI", 0},
		{[]string{"exec"}, EndTx, "EXEC", 0},
		{[]string{"WATCH", "k"}, Watch, "WATCH", 0},
	} {
		b := resp.AppendCommand(nil, tc.args...)
		info, n, err := Inspect(append(b, "*1\r\n$4\r\nPING\r\n"...))
		if err != nil || n != len(b) {
			t.Fatalf("%v: n=%d of %d, %v", tc.args, n, len(b), err)
		}
		if info.Kind != tc.kind || info.Name != tc.name || info.Timeout != tc.timeout {
			t.Errorf("%v: %+v, want kind %d %s %v", tc.args, info, tc.kind, tc.name, tc.timeout)
		}
		if Special(tc.args[0]) != (tc.kind != Plain || tc.name == "CLIENT" || tc.name == "XREAD") {
			t.Errorf("%v: Special = %v", tc.args, Special(tc.args[0]))
		}
	}
	for _, bad := range []string{"", "*1\r\n", "*1\r\n$3\r\nGE", "+OK\r\n", "*1\r\n:1\r\n", "*1\r\n$99999999999\r\n"} {
		if _, _, err := Inspect([]byte(bad)); err == nil {
			t.Errorf("Inspect(%q) accepted", bad)
		}
	}
}

func TestSpecialAllocs(t *testing.T) {
	names := [][]byte{[]byte("GET"), []byte("evalsha"), []byte("subscribe"), []byte("PING")}
	if n := testing.AllocsPerRun(100, func() {
		for _, name := range names {
			if SpecialBytes(name) != Special(string(name)) {
				panic("Special and SpecialBytes disagree")
			}
		}
	}); n != 0 {
		t.Fatalf("Special allocates %v", n)
	}
}

// Special and the kinds table name the same commands.
func TestSpecialMatchesTable(t *testing.T) {
	for _, name := range []string{
		"SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE", "UNSUBSCRIBE", "PUNSUBSCRIBE", "SUNSUBSCRIBE",
		"MONITOR", "RESET", "QUIT", "HELLO", "SELECT", "AUTH", "SYNC", "PSYNC",
		"BLPOP", "BRPOP", "BRPOPLPUSH", "BLMOVE", "BLMPOP", "BZPOPMIN", "BZPOPMAX", "BZMPOP",
		"WAIT", "WAITAOF", "MULTI", "EXEC", "DISCARD", "WATCH", "CLIENT", "XREAD", "XREADGROUP",
	} {
		if !Special(name) {
			t.Errorf("%s not special", name)
		}
		info, _, err := Inspect(resp.AppendCommand(nil, name, "x", "0"))
		if err != nil || info.Name == "" {
			t.Errorf("%s: %v %+v", name, err, info)
		}
	}
	for _, name := range []string{"SETEX", "WAITX", "EXECS", "CLIENTS", "PINGS", "GETDEL", "BLPOPX"} {
		if Special(name) {
			t.Errorf("%s special", name)
		}
	}
}
