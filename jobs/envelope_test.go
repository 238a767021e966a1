package jobs

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

func TestEnvelopeRoundTrip(t *testing.T) {
	cases := []Envelope{
		{Type: "email:send", Body: []byte("hello"), Retries: -1},
		{Type: "a", Body: nil, Retries: 0},
		{Type: "x.y/z-1_2", Body: []byte("\x00\n\r&=% binary\xff"), Retries: 3, Timeout: 1500 * time.Millisecond, Retention: time.Hour, Unique: "abc123"},
	}
	for _, e := range cases {
		p, err := AppendEnvelope(nil, &e)
		if err != nil {
			t.Fatal(err)
		}
		if !IsEnveloped(p) {
			t.Fatalf("%q: not enveloped", p)
		}
		got, err := ParseEnvelope(p)
		if err != nil {
			t.Fatalf("%q: %v", p, err)
		}
		if got.Type != e.Type || !bytes.Equal(got.Body, e.Body) || got.Retries != e.Retries ||
			got.Timeout != e.Timeout || got.Retention != e.Retention || got.Unique != e.Unique {
			t.Fatalf("%q: got %+v, want %+v", p, got, e)
		}
	}
	p, _ := AppendEnvelope(nil, &Envelope{Type: "email:send", Retries: 2, Timeout: time.Second, Body: []byte("b")})
	if want := "EMQ1 t=email:send&r=2&to=1000\nb"; string(p) != want {
		t.Fatalf("wire %q, want %q", p, want)
	}
}

func TestEnvelopeRefusesBadFields(t *testing.T) {
	for _, e := range []Envelope{
		{Type: ""}, {Type: "has space"}, {Type: "a&b"}, {Type: "a=b"}, {Type: "a%b"}, {Type: "nl\n"},
		{Type: string(make([]byte, MaxTypeLen+1))}, {Type: "ok", Unique: "a b"}, {Type: "ok", Timeout: -1},
	} {
		dst := []byte("keep")
		got, err := AppendEnvelope(dst, &e)
		if !errors.Is(err, ErrEnvelope) || string(got) != "keep" {
			t.Errorf("%+v: %q, %v", e, got, err)
		}
	}
}

func TestParseEnvelopeMalformed(t *testing.T) {
	for _, p := range []string{
		"EMQ1 ", "EMQ1 t=a", "EMQ1 \n", "EMQ1 r=1\n", "EMQ1 t=\n", "EMQ1 t=a&\n", "EMQ1 =a\n",
		"EMQ1 t=a&r\n", "EMQ1 t=a&r=x\n", "EMQ1 t=a&r=01\n", "EMQ1 t=a&to=99999999999999999\n",
		"EMQ1 t=a b\n", "EMQ1 t=a&&r=1\n", "EMQ2 t=a\n", "EMQ12 t=a\n", "EMQ1 t=a%20\n",
		"EMQ1 t=" + string(bytes.Repeat([]byte("a"), 5000)) + "\n",
	} {
		_, err := ParseEnvelope([]byte(p))
		var ee *EnvelopeError
		if !errors.As(err, &ee) || !errors.Is(err, ErrEnvelope) {
			t.Errorf("%.40q: %v, want an *EnvelopeError", p, err)
		}
	}
	// A peer's payload is not an envelope, and is no error to IsEnveloped.
	for _, p := range []string{"", "hello", "EMQ", "EMQ ", "EMQx t=a\n", "{\"json\":1}", "EMQ1t=a\n"} {
		if IsEnveloped([]byte(p)) {
			t.Errorf("%q: enveloped", p)
		}
	}
	// Unknown keys are skipped: a later minor addition still reads.
	e, err := ParseEnvelope([]byte("EMQ1 t=a&zz=1&new=x\nbody"))
	if err != nil || e.Type != "a" || string(e.Body) != "body" {
		t.Fatalf("%+v, %v", e, err)
	}
}

func TestParseEnvelopeAllocs(t *testing.T) {
	p, _ := AppendEnvelope(nil, &Envelope{Type: "email:send", Retries: 3, Timeout: time.Second, Retention: time.Minute, Unique: "k", Body: []byte("body")})
	var sink Envelope
	n := testing.AllocsPerRun(1000, func() {
		e, err := ParseEnvelope(p)
		if err != nil {
			panic(err)
		}
		sink = e
	})
	if n != 0 {
		t.Fatalf("ParseEnvelope: %v allocations, want 0", n)
	}
	_ = sink
	dst := make([]byte, 0, 256)
	n = testing.AllocsPerRun(1000, func() {
		e := Envelope{Type: "email:send", Retries: 3, Body: []byte("body")}
		dst, _ = AppendEnvelope(dst[:0], &e)
	})
	if n != 0 {
		t.Fatalf("AppendEnvelope into room: %v allocations, want 0", n)
	}
}

func FuzzParseEnvelope(f *testing.F) {
	f.Add([]byte("EMQ1 t=email:send&r=3&to=5000&rt=60000&u=x\nbody"))
	f.Add([]byte("EMQ1 t=a\n"))
	f.Add([]byte("EMQ1 t=a&&\n"))
	f.Add([]byte("EMQ9 t=a\n"))
	f.Add([]byte("plain"))
	f.Fuzz(func(t *testing.T, p []byte) {
		e, err := ParseEnvelope(p)
		if err != nil {
			var ee *EnvelopeError
			if !errors.As(err, &ee) {
				t.Fatalf("%q: error %T, want *EnvelopeError", p, err)
			}
			return
		}
		// A parsed envelope encodes again to one that parses the same.
		q, err := AppendEnvelope(nil, &e)
		if err != nil {
			t.Fatalf("%q parsed to %+v, which does not encode: %v", p, e, err)
		}
		e2, err := ParseEnvelope(q)
		if err != nil || e2.Type != e.Type || !bytes.Equal(e2.Body, e.Body) || e2.Retries != e.Retries ||
			e2.Timeout != e.Timeout || e2.Retention != e.Retention || e2.Unique != e.Unique {
			t.Fatalf("%q → %+v → %q → %+v, %v", p, e, q, e2, err)
		}
	})
}
