package emq

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestBrandedIDVectors(t *testing.T) {
	for _, row := range readTSV(t, "branded_ids.tsv", 4) {
		id, verdict := row[0], row[1]
		ns, sf, err := ParseID(id)
		switch verdict {
		case "valid":
			want, perr := strconv.ParseUint(row[3], 10, 64)
			if perr != nil {
				t.Fatalf("bad snowflake %q", row[3])
			}
			if err != nil || ns != row[2] || sf != want {
				t.Errorf("ParseID(%q) = %q, %d, %v; want %q, %d", id, ns, sf, err, row[2], want)
			}
			if !ValidID(id) || Namespace(id) != row[2] {
				t.Errorf("ValidID/Namespace(%q) disagree with ParseID", id)
			}
			if got, err := FormatID(row[2], want); err != nil || got != id {
				t.Errorf("FormatID(%q, %d) = %q, %v; want %q", row[2], want, got, err, id)
			}
		case "invalid":
			if err == nil || !errors.Is(err, ErrInvalidID) {
				t.Errorf("ParseID(%q) = %q, %d, %v; want ErrInvalidID", id, ns, sf, err)
			}
			if ValidID(id) || Namespace(id) != "" {
				t.Errorf("ValidID/Namespace(%q) accept an invalid id", id)
			}
		default:
			t.Fatalf("verdict %q", verdict)
		}
	}
}

func TestParseIDErrors(t *testing.T) {
	tests := []struct{ id, why string }{
		{"", "length"},
		{"JOB0KHTOWnGLu", "length"},
		{"JOB0KHTOWnGLuCx", "length"},
		{"job0KHTOWnGLuC", "namespace"},
		{"J0B0KHTOWnGLuC", "namespace"},
		{"JOB0KHTOWnGL_C", "alphabet"},
		{"JOB0KHTOWnGL\x00C", "alphabet"},
		{"JOBAzL8n0Y58m8", "63 bits"}, // 2^63
		{"JOBB0000000000", "63 bits"},
		{"JOBzzzzzzzzzzz", "63 bits"}, // 62^11 - 1, above 2^64 too
	}
	for _, tt := range tests {
		_, _, err := ParseID(tt.id)
		var ie *IDError
		if !errors.As(err, &ie) || !errors.Is(err, ErrInvalidID) || ie.ID != tt.id {
			t.Errorf("ParseID(%q) = %v, want an *IDError", tt.id, err)
			continue
		}
		if !strings.Contains(err.Error(), tt.why) || !strings.Contains(err.Error(), strconv.Quote(tt.id)) {
			t.Errorf("ParseID(%q) message %q lacks %q or the quoted id", tt.id, err, tt.why)
		}
	}
}

func TestFormatIDRoundTrip(t *testing.T) {
	values := []uint64{0, 1, 61, 62, 3843, 3844, 1 << 22, 274557032793636864, 1<<62 - 1, 1 << 62, MaxSnowflake - 1, MaxSnowflake}
	for v := uint64(1); v < MaxSnowflake/7; v = v*7 + 3 {
		values = append(values, v)
	}
	for _, v := range values {
		id, err := FormatID("ABC", v)
		if err != nil {
			t.Fatalf("FormatID(%d): %v", v, err)
		}
		if len(id) != IDLen {
			t.Fatalf("FormatID(%d) = %q: length %d", v, id, len(id))
		}
		ns, got, err := ParseID(id)
		if err != nil || ns != "ABC" || got != v {
			t.Fatalf("ParseID(FormatID(%d) = %q) = %q, %d, %v", v, id, ns, got, err)
		}
	}
	// Byte order is numeric order.
	slices.Sort(values)
	for i := 1; i < len(values); i++ {
		a, _ := FormatID("JOB", values[i-1])
		b, _ := FormatID("JOB", values[i])
		if values[i-1] < values[i] && a >= b {
			t.Errorf("FormatID order: %d < %d but %q >= %q", values[i-1], values[i], a, b)
		}
	}
	if id, _ := FormatID("QTE", MaxSnowflake); id != "QTEAzL8n0Y58m7" {
		t.Errorf("FormatID(max) = %q", id)
	}
}

// TestAppendIDReference checks the split encoder against the plain
// eleven-division one, on random values and on the digit-group edges.
func TestAppendIDReference(t *testing.T) {
	ref := func(v uint64) string {
		var d [11]byte
		for i := 10; i >= 0; i-- {
			d[i] = base62[v%62]
			v /= 62
		}
		return "JOB" + string(d[:])
	}
	values := []uint64{0, MaxSnowflake}
	p := uint64(1)
	for range 10 {
		p *= 62
		values = append(values, p-1, p, p+1)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 100_000 {
		values = append(values, r.Uint64()&MaxSnowflake)
	}
	for _, v := range values {
		if v > MaxSnowflake {
			continue
		}
		if got, _ := FormatID("JOB", v); got != ref(v) {
			t.Fatalf("FormatID(%d) = %q, want %q", v, got, ref(v))
		}
	}
}

func TestFormatIDErrors(t *testing.T) {
	for _, ns := range []string{"", "JO", "JOBS", "job", "J0B", "ÄB"} {
		if _, err := FormatID(ns, 1); !errors.Is(err, ErrInvalidID) {
			t.Errorf("FormatID(%q) = %v, want ErrInvalidID", ns, err)
		}
	}
	for _, v := range []uint64{MaxSnowflake + 1, 1<<64 - 1} {
		if _, err := FormatID("JOB", v); !errors.Is(err, ErrInvalidID) {
			t.Errorf("FormatID(%d) = %v, want ErrInvalidID", v, err)
		}
	}
	dst := []byte("keep")
	if got, err := AppendID(dst, "JOB", MaxSnowflake+1); err == nil || string(got) != "keep" {
		t.Errorf("AppendID on error = %q, %v; want dst unchanged", got, err)
	}
}

func TestSnowflakeParts(t *testing.T) {
	mint := time.Date(2026, 1, 27, 15, 11, 37, 641_000_000, time.UTC)
	sf, err := ComposeSnowflake(mint, 0, 0)
	if err != nil || sf != 274557032793636864 {
		t.Fatalf("ComposeSnowflake = %d, %v; want the vector 274557032793636864", sf, err)
	}
	if got := SnowflakeTime(sf); !got.Equal(mint) {
		t.Errorf("SnowflakeTime = %v, want %v", got, mint)
	}
	sf, err = ComposeSnowflake(mint, MaxNode, MaxSeq)
	if err != nil {
		t.Fatal(err)
	}
	if ms, node, seq := SplitSnowflake(sf); ms != 65459497641 || node != MaxNode || seq != MaxSeq {
		t.Errorf("SplitSnowflake = %d, %d, %d", ms, node, seq)
	}
	epoch := time.UnixMilli(EpochMillis)
	for name, tc := range map[string]struct {
		t         time.Time
		node, seq uint16
	}{
		"before epoch": {epoch.Add(-time.Millisecond), 0, 0},
		"past 41 bits": {epoch.Add((MaxElapsedMs + 1) * time.Millisecond), 0, 0},
		"node":         {epoch, MaxNode + 1, 0},
		"seq":          {epoch, 0, MaxSeq + 1},
	} {
		if _, err := ComposeSnowflake(tc.t, tc.node, tc.seq); !errors.Is(err, ErrInvalidID) {
			t.Errorf("%s: ComposeSnowflake = %v, want ErrInvalidID", name, err)
		}
	}
	if sf, err := ComposeSnowflake(epoch.Add(MaxElapsedMs*time.Millisecond), MaxNode, MaxSeq); err != nil || sf != MaxSnowflake {
		t.Errorf("ComposeSnowflake(last) = %d, %v; want MaxSnowflake", sf, err)
	}
}

// fakeClock is a settable Unix-ms clock for generators under test.
type fakeClock struct{ ms atomic.Int64 }

func (c *fakeClock) set(ms int64) { c.ms.Store(ms) }

func newFakeGen(t *testing.T, c *fakeClock, node uint16) *IDGenerator {
	t.Helper()
	g, err := NewIDGenerator(JobNamespace, node)
	if err != nil {
		t.Fatal(err)
	}
	g.now = c.ms.Load
	return g
}

func TestNewIDGenerator(t *testing.T) {
	if _, err := NewIDGenerator("job", 1); !errors.Is(err, ErrInvalidID) {
		t.Errorf("lowercase namespace: %v", err)
	}
	if _, err := NewIDGenerator("JOB", MaxNode+1); !errors.Is(err, ErrInvalidID) {
		t.Errorf("node 1024: %v", err)
	}
	g, err := NewIDGenerator("QTE", 777)
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now().Add(-time.Millisecond)
	id := g.Next()
	ns, sf, err := ParseID(id)
	if err != nil || ns != "QTE" || g.Namespace() != "QTE" || g.Node() != 777 {
		t.Fatalf("Next = %q: %q, %v", id, ns, err)
	}
	if _, node, _ := SplitSnowflake(sf); node != 777 {
		t.Errorf("node %d, want 777", node)
	}
	if mint := SnowflakeTime(sf); mint.Before(before) || mint.After(time.Now().Add(time.Millisecond)) {
		t.Errorf("mint time %v is not now", mint)
	}
	if n := DefaultNode(); n > MaxNode || n != DefaultNode() {
		t.Errorf("DefaultNode = %d, not stable or out of range", n)
	}
}

func TestIDGeneratorConcurrent(t *testing.T) {
	const workers, per = 8, 50_000
	g, err := NewIDGenerator(JobNamespace, 3)
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]string, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			ids := make([]string, per)
			for i := range ids {
				ids[i] = g.Next()
			}
			out[w] = ids
		})
	}
	wg.Wait()
	var all []uint64
	for w, ids := range out {
		for i, id := range ids {
			if i > 0 && id <= ids[i-1] {
				t.Fatalf("worker %d: id %d %q not above %q", w, i, id, ids[i-1])
			}
			_, sf, err := ParseID(id)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, sf)
		}
	}
	slices.Sort(all)
	for i := 1; i < len(all); i++ {
		if all[i] == all[i-1] {
			t.Fatalf("duplicate snowflake %d", all[i])
		}
	}
	// The last id minted is above every other.
	if last := g.Next(); last <= out[0][per-1] {
		t.Errorf("final id %q not above %q", last, out[0][per-1])
	}
}

func TestIDGeneratorExhaustion(t *testing.T) {
	var c fakeClock
	const ms0 = EpochMillis + 1000
	c.set(ms0)
	g := newFakeGen(t, &c, 5)
	for i := range MaxSeq + 1 {
		sf := g.NextSnowflake()
		if ms, node, seq := SplitSnowflake(sf); ms != 1000 || node != 5 || int(seq) != i {
			t.Fatalf("id %d: ms %d node %d seq %d", i, ms, node, seq)
		}
	}
	// The millisecond is spent: the next id waits for the clock.
	got := make(chan uint64)
	go func() { got <- g.NextSnowflake() }()
	select {
	case sf := <-got:
		t.Fatalf("minted %d in a spent millisecond", sf)
	case <-time.After(30 * time.Millisecond):
	}
	c.set(ms0 + 1)
	select {
	case sf := <-got:
		if ms, _, seq := SplitSnowflake(sf); ms != 1001 || seq != 0 {
			t.Fatalf("after the tick: ms %d seq %d, want 1001, 0", ms, seq)
		}
	case <-time.After(30 * time.Second): // only a hang gets here
		t.Fatal("generator still waiting after the clock moved")
	}
}

func TestIDGeneratorClockBackwards(t *testing.T) {
	var c fakeClock
	const ms0 = EpochMillis + 50_000
	c.set(ms0)
	g := newFakeGen(t, &c, 9)
	prev := g.NextSnowflake()
	next := func() uint64 {
		t.Helper()
		sf := g.NextSnowflake()
		if sf <= prev {
			t.Fatalf("snowflake %d not above %d", sf, prev)
		}
		prev = sf
		return sf
	}
	c.set(ms0 - 10) // the clock steps back 10 ms
	for i := 1; i <= MaxSeq; i++ {
		if ms, _, seq := SplitSnowflake(next()); ms != 50_000 || int(seq) != i {
			t.Fatalf("clock behind, id %d: ms %d seq %d; want the last ms, counting on", i, ms, seq)
		}
	}
	// The sequence is spent while the clock is behind: borrow, do not wait.
	for i := range 5000 {
		ms, _, seq := SplitSnowflake(next())
		if want := uint64(50_001 + i/(MaxSeq+1)); ms != want || int(seq) != i%(MaxSeq+1) {
			t.Fatalf("borrowing, id %d: ms %d seq %d; want ms %d", i, ms, seq, want)
		}
	}
	// The clock catches up with the borrowed ms: count on in it.
	c.set(ms0 + 2)
	if ms, _, _ := SplitSnowflake(next()); ms != 50_002 {
		t.Fatalf("clock caught up: ms %d, want 50002", ms)
	}
	// And passes it: a fresh millisecond, sequence 0.
	c.set(ms0 + 20)
	if ms, _, seq := SplitSnowflake(next()); ms != 50_020 || seq != 0 {
		t.Fatalf("clock ahead: ms %d seq %d", ms, seq)
	}
	// A clock before the epoch reads as the epoch; still increasing.
	c.set(0)
	next()
}

func TestIDAllocs(t *testing.T) {
	g, err := NewIDGenerator(JobNamespace, 1)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 0, IDLen)
	for name, f := range map[string]func(){
		"IDGenerator.AppendNext": func() { buf = g.AppendNext(buf[:0]) },
		"AppendID":               func() { buf, _ = AppendID(buf[:0], "JOB", 274557032793636864) },
		"ParseID":                func() { _, _, _ = ParseID("JOB0KHTOWnGLuC") },
		"ValidID":                func() { _ = ValidID("JOB0KHTOWnGLuC") },
	} {
		if n := testing.AllocsPerRun(1000, f); n != 0 {
			t.Errorf("%s allocates %v times, want 0", name, n)
		}
	}
	if n := testing.AllocsPerRun(1000, func() { _ = g.Next() }); n > 1 {
		t.Errorf("Next allocates %v times, want 1 (the string)", n)
	}
}

var (
	sinkSF  uint64
	sinkStr string
)

func BenchmarkParseID(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_, sinkSF, _ = ParseID("JOB0KHTOWnGLuC")
	}
}

func BenchmarkFormatID(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		sinkStr, _ = FormatID("JOB", 274557032793636864)
	}
}

// The wall-clock benchmarks are capped by design at 4096 ids per ms
// (about 244 ns/op): past that the generator waits for the next ms.
func BenchmarkIDGeneratorNext(b *testing.B) {
	g, _ := NewIDGenerator(JobNamespace, 1)
	b.ReportAllocs()
	for b.Loop() {
		sinkStr = g.Next()
	}
}

func BenchmarkIDGeneratorAppendNext(b *testing.B) {
	g, _ := NewIDGenerator(JobNamespace, 1)
	buf := make([]byte, 0, IDLen)
	b.ReportAllocs()
	for b.Loop() {
		buf = g.AppendNext(buf[:0])
	}
}

// uncappedGen returns a generator whose clock advances one ms every 4096
// reads, so the hot path's own cost shows, not the per-ms cap.
func uncappedGen() *IDGenerator {
	g, _ := NewIDGenerator(JobNamespace, 1)
	var ticks atomic.Int64
	g.now = func() int64 { return EpochMillis + ticks.Add(1)>>SeqBits }
	return g
}

func BenchmarkIDGeneratorUncapped(b *testing.B) {
	g := uncappedGen()
	buf := make([]byte, 0, IDLen)
	b.ReportAllocs()
	for b.Loop() {
		buf = g.AppendNext(buf[:0])
	}
}

func BenchmarkIDGeneratorUncappedParallel(b *testing.B) {
	g := uncappedGen()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		buf := make([]byte, 0, IDLen)
		for pb.Next() {
			buf = g.AppendNext(buf[:0])
		}
	})
}

// TestIDGeneratorRuns: mintIDs reads the clock once per run of ids, and the
// runs are the ids NextSnowflake mints one by one: strictly increasing, a
// spent millisecond's sequence carrying into the next while the clock is
// behind, a fresh millisecond starting at sequence 0.
func TestIDGeneratorRuns(t *testing.T) {
	var reads atomic.Int64
	var c fakeClock
	const ms0 = EpochMillis + 7000
	c.set(ms0)
	g := newFakeGen(t, &c, 11)
	g.now = func() int64 { reads.Add(1); return c.ms.Load() }
	q := &Queue{ids: g}
	check := func(ids string, n int, wantMs uint64, wantSeq int) {
		t.Helper()
		if len(ids) != n*IDLen {
			t.Fatalf("%d bytes for %d ids", len(ids), n)
		}
		for i := range n {
			_, sf, err := ParseID(ids[i*IDLen : (i+1)*IDLen])
			if err != nil {
				t.Fatal(err)
			}
			seq := wantSeq + i
			ms := wantMs + uint64(seq/(MaxSeq+1))
			if gotMs, node, gotSeq := SplitSnowflake(sf); gotMs != ms || node != 11 || int(gotSeq) != seq%(MaxSeq+1) {
				t.Fatalf("id %d: ms %d node %d seq %d; want ms %d seq %d", i, gotMs, node, gotSeq, ms, seq%(MaxSeq+1))
			}
		}
	}
	check(q.mintIDs(100), 100, 7000, 0)
	if n := reads.Load(); n != (100+mintRun-1)/mintRun {
		t.Errorf("%d clock reads for 100 ids, want %d", n, (100+mintRun-1)/mintRun)
	}
	if sf := g.NextSnowflake(); sf&MaxSeq != 100 {
		t.Errorf("Next after the runs: seq %d, want 100", sf&MaxSeq)
	}
	// The clock behind: the run counts on past the millisecond's end.
	c.set(ms0 - 5)
	check(q.mintIDs(MaxSeq), MaxSeq, 7000, 101)
	// The clock ahead: a fresh millisecond.
	c.set(ms0 + 50)
	check(q.mintIDs(3), 3, 7050, 0)
}
