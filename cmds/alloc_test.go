package cmds

import (
	"math"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/echomq/echomq-go/resp"
)

var sinkCmd Command

// TestBuildAllocatesNothing: once a Builder has grown, building a command
// allocates nothing, whatever its options.
func TestBuildAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation budgets do not hold under the race detector")
	}
	var b Builder
	key, val := "user:1", "Ada Lovelace"
	for name, build := range map[string]func(){
		"GET":               func() { sinkCmd = b.Get(key).Build() },
		"SET NX EX":         func() { sinkCmd = b.Set(key, val).Nx().Ex(time.Minute).Build() },
		"INCRBYFLOAT":       func() { sinkCmd = b.Incrbyfloat(key, 1.5).Build() },
		"MGET":              func() { sinkCmd = b.Mget(key, "a", "b").Build() },
		"HSET":              func() { sinkCmd = b.Hset(key, FieldValue{"f", val}, FieldValue{"g", val}).Build() },
		"ZADD":              func() { sinkCmd = b.Zadd(key, ScoreMember{1.5, "a"}, ScoreMember{math.Inf(1), "b"}).Gt().Ch().Build() },
		"ZRANGE WITHSCORES": func() { sinkCmd = b.Zrange(key, "0", "-1").Rev().Withscores().Build() },
		"BLPOP":             func() { sinkCmd = b.Blpop([]string{key, "other"}, 1500*time.Millisecond).Build() },
		"XADD": func() {
			sinkCmd = b.Xadd(key, FieldValue{"f", val}).Trim(MaxLen, "1000").TrimApproximately().AutoId().Build()
		},
		"XREADGROUP": func() { sinkCmd = b.Xreadgroup("g", "c", []string{key}, ">").Count(10).Block(time.Second).Build() },
		"EVALSHA": func() {
			sinkCmd = b.Evalsha("0123456789abcdef0123456789abcdef01234567", key, "b").Arg("1", "2").Build()
		},
		"BITFIELD": func() { sinkCmd = b.Bitfield(key).Overflow(Sat).Incrby("u8", 0, 1).Get("u8", 0).Build() },
	} {
		build() // grow
		if n := testing.AllocsPerRun(200, build); n != 0 {
			t.Errorf("%s: %v allocations per build", name, n)
		}
		if err := sinkCmd.Err(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestNumericRepliesAllocateNothing: the numeric and boolean decoders
// read a reply without allocating, under both protocols' forms.
func TestNumericRepliesAllocateNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation budgets do not hold under the race detector")
	}
	parse := func(s string) resp.Value {
		v, _, err := resp.Parse([]byte(s), resp.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	vals := []resp.Value{parse(":42\r\n"), parse("$4\r\n30.5\r\n"), parse(",30.5\r\n"), parse("#t\r\n"), parse("_\r\n"), parse("+OK\r\n"), parse("$3\r\ninf\r\n")}
	var sinkF float64
	var sinkI int64
	var sinkB bool
	for name, fn := range map[string]func(v resp.Value){
		"Int":        func(v resp.Value) { sinkI, _ = Int(v) },
		"IntOrNil":   func(v resp.Value) { sinkI, sinkB, _ = IntOrNil(v) },
		"Float":      func(v resp.Value) { sinkF, _ = Float(v) },
		"FloatOrNil": func(v resp.Value) { sinkF, sinkB, _ = FloatOrNil(v) },
		"Bool":       func(v resp.Value) { sinkB, _ = Bool(v) },
		"OKOrNil":    func(v resp.Value) { sinkB, _ = OKOrNil(v) },
	} {
		for _, v := range vals {
			ok := true
			switch name {
			case "Int", "IntOrNil":
				_, err := v.AsInt()
				ok = err == nil || v.IsNull() && name == "IntOrNil"
			case "Float", "FloatOrNil":
				_, err := v.AsFloat()
				ok = err == nil || v.IsNull() && name == "FloatOrNil"
			case "Bool":
				ok = v.Type == resp.Integer || v.Type == resp.Boolean
			case "OKOrNil":
				ok = v.IsNull() || v.Type == resp.SimpleString
			}
			if !ok {
				continue // the failure path may allocate its error
			}
			if n := testing.AllocsPerRun(100, func() { fn(v) }); n != 0 {
				t.Errorf("%s(%v): %v allocations", name, v, n)
			}
		}
	}
	_, _, _ = sinkF, sinkI, sinkB
}

// TestStatusAllocatesNothing: Status of a common status (PING's PONG,
// OK, MULTI's QUEUED, TYPE's replies) allocates nothing: it copied the
// text into a new string, one allocation per PING of a typed pipeline.
// Another status is still read right, as a copy.
func TestStatusAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation budgets do not hold under the race detector")
	}
	var sink string
	for _, s := range []string{"OK", "PONG", "QUEUED", "string", "list", "set", "zset", "hash", "stream", "none"} {
		v, _, err := resp.Parse([]byte("+"+s+"\r\n"), resp.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(100, func() { sink, _ = Status(v) }); n != 0 {
			t.Errorf("Status(+%s) = %v allocations, want 0", s, n)
		}
		if got, err := Status(v); got != s || err != nil {
			t.Errorf("Status(+%s) = %q, %v", s, got, err)
		}
	}
	v, _, _ := resp.Parse([]byte("+PONGS\r\n"), resp.Limits{})
	if got, err := Status(v); got != "PONGS" || err != nil {
		t.Errorf("Status(+PONGS) = %q, %v", got, err)
	}
	_ = sink
}

func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkBuild is the client's own work of encoding, without the
// network: the typed builder against resp.Command for the same command.
// cpu-ns/op is the process's CPU per command, steadier than the wall time
// on a loaded machine.
func BenchmarkBuild(b *testing.B) {
	var bld Builder
	var buf [128]byte
	var num [32]byte
	for _, c := range []struct {
		name string
		fn   func()
	}{
		{"cmd=SET-EX/via=raw", func() { sinkRaw = resp.Command(buf[:0], "SET", "user:1", "value", "EX", "60") }},
		{"cmd=SET-EX/via=typed", func() { sinkRaw = bld.Set("user:1", "value").Ex(time.Minute).Build().Cmd() }},
		{"cmd=INCR/via=raw", func() { sinkRaw = resp.Command(buf[:0], "INCR", "user:1") }},
		{"cmd=INCR/via=typed", func() { sinkRaw = bld.Incr("user:1").Build().Cmd() }},
		{"cmd=ZADD/via=raw", func() {
			// the score as a caller must write it
			score := strconv.AppendFloat(num[:0], 30.5, 'f', -1, 64)
			sinkRaw = resp.BuildCommand(buf[:0], 5).Arg("ZADD").Arg("board").Arg("GT").ArgBytes(score).Arg("alice").Cmd()
		}},
		{"cmd=ZADD/via=typed", func() { sinkRaw = bld.Zadd("board", ScoreMember{30.5, "alice"}).Gt().Build().Cmd() }},
		// options out of order: the typed builder writes them again in
		// the server's order
		{"cmd=SET-EX-NX/via=raw", func() { sinkRaw = resp.Command(buf[:0], "SET", "user:1", "value", "NX", "EX", "60") }},
		{"cmd=SET-EX-NX/via=typed", func() { sinkRaw = bld.Set("user:1", "value").Ex(time.Minute).Nx().Build().Cmd() }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := cpuNow()
			for b.Loop() {
				c.fn()
			}
			b.ReportMetric(float64(cpuNow()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

var sinkRaw resp.Cmd
