package submit_test

import (
	"errors"
	"testing"

	"github.com/echomq/echomq-go/resp"
	"github.com/echomq/echomq-go/submit"
)

// TestNewChecksTheBytes: New takes exactly n whole commands and nothing
// else; its submission has no facts, is not Plain, and All gives its
// commands back.
func TestNewChecksTheBytes(t *testing.T) {
	ping := resp.AppendCommand(nil, "PING")
	set := resp.AppendCommand(nil, "SET", "k", "a value")
	for _, tc := range []struct {
		name string
		b    []byte
		n    int
	}{
		{"fewer commands than n", ping, 2},
		{"more", append(append([]byte(nil), ping...), ping...), 1},
		{"inline", []byte("PING\r\n"), 1},
		{"cut", ping[:len(ping)-1], 1},
		{"cut bulk", set[:len(set)-3], 1},
		{"not bulk strings", []byte("*1\r\n:1\r\n"), 1},
		{"no arguments", []byte("*0\r\n"), 1},
		{"short bulk", []byte("*1\r\n$9999\r\nx\r\n"), 1},
		{"no CRLF after a bulk", []byte("*1\r\n$1\r\nxy\r\n"), 1},
		{"no digits", []byte("*\r\n"), 1},
		{"negative n", ping, -1},
		{"bytes for none", ping, 0},
	} {
		if _, err := submit.New(tc.b, tc.n); !errors.Is(err, submit.ErrMalformed) {
			t.Errorf("%s: New(%q, %d) = %v, want ErrMalformed", tc.name, tc.b, tc.n, err)
		}
	}
	b := append(append([]byte(nil), set...), ping...)
	c, err := submit.New(b, 2)
	if err != nil {
		t.Fatal(err)
	}
	if c.Len() != 2 || string(c.Bytes()) != string(b) || len(c.Facts()) != 2 || c.Plain() {
		t.Fatalf("New: Len %d, Bytes %q, Facts %v, Plain %v", c.Len(), c.Bytes(), c.Facts(), c.Plain())
	}
	// The facts are made as New reads the bytes, the one read: no Sender
	// reads them again (issue 24).
	f := c.Facts()
	if f[0].Info == nil || f[0].Info.Name != "set" || len(f[0].Keys) != 1 || string(f[0].Key(b, 0)) != "k" ||
		int(f[0].Size) != len(set) || f[1].Info == nil || f[1].Info.Name != "ping" || len(f[1].Keys) != 0 {
		t.Fatalf("New: facts %+v", f)
	}
	var got []string
	for i, args := range c.All() {
		got = append(got, string(rune('0'+i)))
		for _, a := range args {
			got = append(got, string(a))
		}
	}
	if want := "0 SET k a value 1 PING"; join(got) != want {
		t.Fatalf("All: %q, want %q", join(got), want)
	}
	if z, err := submit.New(nil, 0); err != nil || z.Len() != 0 {
		t.Fatalf("New(nil, 0) = %v, %v", z, err)
	}
}

func join(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out
}
