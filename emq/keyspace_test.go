package emq

import (
	"bufio"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
)

// readTSV returns the data rows of a testdata table: tab-separated fields,
// '#' lines skipped, "<empty>" standing for the empty string.
//
// testdata/*.tsv are copies of the project's shared vectors
// (shared/vectors/slots.tsv and shared/vectors/branded_ids.tsv), kept here
// so that the repository is self-contained. Refresh them from there.
func readTSV(t *testing.T, name string, fields int) [][]string {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows [][]string
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		row := strings.Split(text, "\t")
		if len(row) != fields {
			t.Fatalf("%s:%d: %d fields, want %d: %q", name, line, len(row), fields, text)
		}
		for i, v := range row {
			if v == "<empty>" {
				row[i] = ""
			}
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no rows", name)
	}
	return rows
}

func TestSlotVectors(t *testing.T) {
	for _, row := range readTSV(t, "slots.tsv", 3) {
		key, tag := row[0], row[1]
		want, err := strconv.ParseUint(row[2], 10, 16)
		if err != nil {
			t.Fatalf("bad slot %q", row[2])
		}
		if got := Hashtag(key); got != tag {
			t.Errorf("Hashtag(%q) = %q, want %q", key, got, tag)
		}
		if got := Slot(key); got != uint16(want) {
			t.Errorf("Slot(%q) = %d, want %d", key, got, want)
		}
	}
}

func TestSlotKnown(t *testing.T) {
	if got := Slot("123456789"); got != 12739 {
		t.Fatalf("Slot(123456789) = %d, want 12739", got)
	}
	// Every key of a queue shares the queue's slot, whatever the suffix.
	k, err := NewKeys("orders")
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{k.Base, k.Pending, k.Active, k.Delayed, k.Dead, k.Meta, k.Job("JOB0KHTOWnGLuC")} {
		if got := Slot(key); got != k.Slot || got != Slot("orders") {
			t.Errorf("Slot(%q) = %d, want %d", key, got, k.Slot)
		}
	}
}

func TestValidQueue(t *testing.T) {
	tests := []struct {
		name  string
		q     string
		valid bool
		why   string // a fragment of the error message
	}{
		{"empty", "", false, "empty"},
		{"one byte", "a", true, ""},
		{"256 bytes", strings.Repeat("q", 256), true, ""},
		{"257 bytes", strings.Repeat("q", 257), false, "257 bytes, longer than 256"},
		{"open brace", "a{b", false, `'{' at byte 1`},
		{"close brace", "ab}", false, `'}' at byte 2`},
		{"hashtag", "{q}", false, `'{' at byte 0`},
		{"NUL", "a\x00b", false, "NUL at byte 1"},
		{"spaces and colons", "my queue:v2", true, ""},
		{"utf-8", "очередь", true, ""},
		{"binary", "\xff\x01", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidQueue(tt.q)
			if tt.valid {
				if err != nil {
					t.Fatalf("ValidQueue: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidQueue) {
				t.Fatalf("ValidQueue = %v, want ErrInvalidQueue", err)
			}
			var qe *QueueError
			if !errors.As(err, &qe) || qe.Queue != tt.q {
				t.Fatalf("error %#v does not carry the queue", err)
			}
			if msg := err.Error(); !strings.Contains(msg, tt.why) {
				t.Errorf("message %q lacks %q", msg, tt.why)
			}
			if _, err := NewKeys(tt.q); !errors.Is(err, ErrInvalidQueue) {
				t.Errorf("NewKeys = %v, want ErrInvalidQueue", err)
			}
		})
	}
}

func TestQueueErrorMessage(t *testing.T) {
	err := ValidQueue("a{b")
	if got, want := err.Error(), `emq: invalid queue name "a{b": contains '{' at byte 1`; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
	long := strings.Repeat("x", 300) + "{"
	msg := ValidQueue(long).Error()
	if len(msg) > 200 || !strings.Contains(msg, "(301 bytes)") {
		t.Errorf("long name not clipped: %q", msg)
	}
}

func TestKeys(t *testing.T) {
	k, err := NewKeys("quotes")
	if err != nil {
		t.Fatal(err)
	}
	want := Keys{
		Queue:     "quotes",
		Base:      "emq:{quotes}:",
		Pending:   "emq:{quotes}:pending",
		Active:    "emq:{quotes}:active",
		Delayed:   "emq:{quotes}:delayed",
		Dead:      "emq:{quotes}:dead",
		Meta:      "emq:{quotes}:meta",
		JobPrefix: "emq:{quotes}:job:",
		Slot:      3378,
	}
	if k != want {
		t.Fatalf("NewKeys = %+v\nwant %+v", k, want)
	}
	const id = "JOB0KHTOWnGLuC"
	const row = "emq:{quotes}:job:JOB0KHTOWnGLuC"
	for name, got := range map[string]string{
		"Keys.Job":     k.Job(id),
		"JobKey":       JobKey("quotes", id),
		"AppendJobKey": string(AppendJobKey(nil, "quotes", id)),
		"AppendJob":    string(k.AppendJob([]byte("x"), id)[1:]),
	} {
		if got != row {
			t.Errorf("%s = %q, want %q", name, got, row)
		}
	}
	if got := QueueKey("quotes", TypePending); got != k.Pending {
		t.Errorf("QueueKey = %q", got)
	}
	if got := Base("quotes"); got != k.Base {
		t.Errorf("Base = %q", got)
	}
	if VersionKey != "{emq}:version" || Version != "echomq:6.0.0" {
		t.Errorf("fence %q = %q", VersionKey, Version)
	}
}

func TestKeyBuildersPanicOnInvalidQueue(t *testing.T) {
	for name, build := range map[string]func(){
		"QueueKey":     func() { QueueKey("a}b", TypePending) },
		"Base":         func() { Base("") },
		"JobKey":       func() { JobKey("a\x00", "JOB0KHTOWnGLuC") },
		"AppendJobKey": func() { AppendJobKey(nil, strings.Repeat("q", 257), "JOB0KHTOWnGLuC") },
	} {
		func() {
			defer func() {
				err, _ := recover().(error)
				if !errors.Is(err, ErrInvalidQueue) {
					t.Errorf("%s: recovered %v, want ErrInvalidQueue", name, err)
				}
			}()
			build()
		}()
	}
}

func TestKeyAllocs(t *testing.T) {
	k, err := NewKeys("orders")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 0, 64)
	const id = "JOB0KHTOWnGLuC"
	for name, f := range map[string]func(){
		"AppendJobKey": func() { buf = AppendJobKey(buf[:0], "orders", id) },
		"AppendJob":    func() { buf = k.AppendJob(buf[:0], id) },
		"ValidQueue":   func() { _ = ValidQueue("orders") },
		"Slot":         func() { _ = Slot(k.Pending) },
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s allocates %v times, want 0", name, n)
		}
	}
}

var sinkSlot uint16

func BenchmarkSlot(b *testing.B) {
	b.ReportAllocs()
	key := "emq:{orders}:job:JOB0KHTOWnGLuC"
	for b.Loop() {
		sinkSlot = Slot(key)
	}
}

func BenchmarkAppendJob(b *testing.B) {
	b.ReportAllocs()
	k, _ := NewKeys("orders")
	buf := make([]byte, 0, 64)
	for b.Loop() {
		buf = k.AppendJob(buf[:0], "JOB0KHTOWnGLuC")
	}
}
