package conn_test

import (
	"crypto/tls"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq-go/conn"
)

func TestParseURL(t *testing.T) {
	cases := []struct {
		url  string
		want conn.Options // TLS compared as "set or not" (see tls)
		tls  bool
	}{
		{"redis://", conn.Options{Addr: "127.0.0.1:6379"}, false},
		{"redis://example.com", conn.Options{Addr: "example.com:6379"}, false},
		{"redis://example.com:7000/5", conn.Options{Addr: "example.com:7000", DB: 5}, false},
		{"redis://[::1]:7000/", conn.Options{Addr: "[::1]:7000"}, false},
		{"redis://alice:s3cret@h:1/2", conn.Options{Addr: "h:1", Username: "alice", Password: "s3cret", DB: 2}, false},
		{"redis://:s3cret@h:1", conn.Options{Addr: "h:1", Password: "s3cret"}, false},
		{"redis://s3cret@h:1", conn.Options{Addr: "h:1", Password: "s3cret"}, false}, // as redis-cli reads it
		{"redis://alice:p%40ss%2Fw%3Ard@h", conn.Options{Addr: "h:6379", Username: "alice", Password: "p@ss/w:rd"}, false},
		{"rediss://h:6380/1", conn.Options{Addr: "h:6380", DB: 1}, true},
		{"valkey://h", conn.Options{Addr: "h:6379"}, false},
		{"valkeys://bob:pw@h:6390", conn.Options{Addr: "h:6390", Username: "bob", Password: "pw"}, true},
		{"unix:///tmp/redis.sock", conn.Options{Network: "unix", Addr: "/tmp/redis.sock"}, false},
		{"unix://alice:pw@/tmp/r.sock?db=4&protocol=2", conn.Options{Network: "unix", Addr: "/tmp/r.sock", Username: "alice", Password: "pw", DB: 4, Protocol: 2}, false},
		{"redis://h?db=7&protocol=3&client_name=worker-1", conn.Options{Addr: "h:6379", DB: 7, Protocol: 3, ClientName: "worker-1"}, false},
		{"redis://h/1?db=2", conn.Options{Addr: "h:6379", DB: 2}, false}, // the query wins
		{"redis://h?dial_timeout=2s&read_timeout=1m30s&write_timeout=250ms&max_pending=64",
			conn.Options{Addr: "h:6379", DialTimeout: 2 * time.Second, ReadTimeout: 90 * time.Second, WriteTimeout: 250 * time.Millisecond, MaxPending: 64}, false},
		{"redis://h?read_timeout=-1s", conn.Options{Addr: "h:6379", ReadTimeout: -time.Second}, false}, // disables liveness
		{"redis://h?max_arg=1073741824", conn.Options{Addr: "h:6379", MaxArg: 1 << 30}, false},         // a server with a larger proto-max-bulk-len
		{"redis://h?min_backoff=10ms&max_backoff=2s&blocking_conns=16", // the Client's
			conn.Options{Addr: "h:6379", MinBackoff: 10 * time.Millisecond, MaxBackoff: 2 * time.Second, BlockingConns: 16}, false},
		// Reserved characters in the user info: percent-encoded, or an
		// '@' or ':' within the password, which the last '@' and the first
		// ':' place correctly.
		{"redis://admin:4242%23x@host", conn.Options{Addr: "host:6379", Username: "admin", Password: "4242#x"}, false},
		{"redis://:a%2Fb%3Fc%23d%40e%25f@h:1/2", conn.Options{Addr: "h:1", Password: "a/b?c#d@e%f", DB: 2}, false},
		{"redis://a%23b:pw@h", conn.Options{Addr: "h:6379", Username: "a#b", Password: "pw"}, false},
		{"redis://alice:p@ss@h", conn.Options{Addr: "h:6379", Username: "alice", Password: "p@ss"}, false},
		{"redis://alice:p@s:s@@h:7/1", conn.Options{Addr: "h:7", Username: "alice", Password: "p@s:s@", DB: 1}, false},
		{"redis://:@@h", conn.Options{Addr: "h:6379", Password: "@"}, false},
		{"redis://a@b.example:pw@h", conn.Options{Addr: "h:6379", Username: "a@b.example", Password: "pw"}, false},
		{"redis://h?client_name=a%40b%23c", conn.Options{Addr: "h:6379", ClientName: "a@b#c"}, false},
		{"unix:///tmp/a@b.sock", conn.Options{Network: "unix", Addr: "/tmp/a@b.sock"}, false},
		{"unix://:p@w@/tmp/a@b.sock?client_name=x@y", conn.Options{Network: "unix", Addr: "/tmp/a@b.sock", Password: "p@w", ClientName: "x@y"}, false},
		{"unix://:%2Fpw@/tmp/r.sock", conn.Options{Network: "unix", Addr: "/tmp/r.sock", Password: "/pw"}, false},
	}
	for _, c := range cases {
		got, err := conn.ParseURL(c.url)
		if err != nil {
			t.Errorf("ParseURL(%q): %v", c.url, err)
			continue
		}
		if (got.TLS != nil) != c.tls {
			t.Errorf("ParseURL(%q): TLS set = %v, want %v", c.url, got.TLS != nil, c.tls)
		}
		if got.TLS != nil {
			host := c.want.Addr[:strings.LastIndexByte(c.want.Addr, ':')]
			if got.TLS.ServerName != host || got.TLS.MinVersion < tls.VersionTLS12 {
				t.Errorf("ParseURL(%q): TLS ServerName %q MinVersion %x", c.url, got.TLS.ServerName, got.TLS.MinVersion)
			}
		}
		got.TLS = nil
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseURL(%q)\n got %s %+v\nwant %s %+v", c.url, got, got.ReadTimeout, c.want, c.want.ReadTimeout)
		}
	}
}

// Every bad URL is refused, and no error shows the password or any piece
// of it, however the password breaks the URL's syntax.
func TestParseURLBadInputs(t *testing.T) {
	secrets := []string{"Hunter2pw", "xyzzy9"}
	bad := []string{
		"",
		"http://h:6379",
		"redis//h",
		"redis://h:notaport",
		"redis://h:99999999999",
		"redis://h/notadb",
		"redis://h/-1",
		"redis://h/1/2",
		"redis://h?db=-1",
		"redis://h?db=x",
		"redis://h?protocol=4",
		"redis://h?protocol=three",
		"redis://h?dial_timeout=5",
		"redis://h?read_timeout=soon",
		"redis://h?max_pending=many",
		"redis://h?min_backoff=10",
		"redis://h?max_backoff=later",
		"redis://h?blocking_conns=1.5",
		"redis://h?max_arg=big",
		"redis://h?timeout=1s",
		"unix://",
		"unix://h",
		"redis://alice:Hunter2pw@h?db=x",
		"redis://alice:Hunter2pw@h:port",
		"redis://alice:Hunter2pw@h/xyzzy9",
		"redis://alice:Hunter2pw@h?nosuch=xyzzy9",
		"redis://alice:Hunter2pw%zz@h",
		"redis://alice:Hunter2pw@ho st",
		"redis://alice:Hunter2pw@[::1",
		// Passwords holding URL delimiters, not escaped: the parser sees
		// another URL, whose errors must not echo the password's pieces.
		"redis://alice:Hunter2pw/xyzzy9@h:6379",
		"redis://:Hunter2pw/xyzzy9@h",
		"redis://:1234/xyzzy9@h",
		"redis://alice:Hunter2pw#xyzzy9@h",
		"redis://alice:Hunter2pw?xyzzy9@h",
		"redis://alice:Hunter2pw?db=xyzzy9@h",
		"redis://alice:Hunter2pw?client_name=a&xyzzy9@h",
		"unix://alice:Hunter2pw@",
		"redis://alice:Hunter2pw#xyzzy9@h:6379",
		"redis://admin:Hunter2pw#xyzzy9@host",
		"redis://:Hunter2pw?xyzzy9@h:6379/1",
		"redis:alice:Hunter2pw@h",
		"unix://alice:Hunter2pw/xyzzy9@/tmp/r.sock",
		"unix:///Hunter2pw@/tmp/r.sock",
	}
	for _, u := range bad {
		o, err := conn.ParseURL(u)
		if err == nil {
			t.Errorf("ParseURL(%q) = %s, want an error", u, o)
			continue
		}
		for _, s := range secrets {
			if strings.Contains(err.Error(), s) {
				t.Errorf("ParseURL(%q): error shows %q: %v", u, s, err)
			}
		}
	}
}

// Options.String never shows the password, in any fmt verb.
func TestOptionsStringRedacts(t *testing.T) {
	o, err := conn.ParseURL("rediss://alice:Hunter2pw@h:1/3?client_name=w")
	if err != nil {
		t.Fatal(err)
	}
	s := o.String()
	for _, want := range []string{"h:1", "alice", "db=3", "tls=true", "name=w", "REDACTED"} {
		if !strings.Contains(s, want) {
			t.Errorf("String() = %q, want it to show %q", s, want)
		}
	}
	for _, verb := range []string{"%s", "%v", "%+v", "%#v", "%q"} {
		if out := fmt.Sprintf(verb, o); strings.Contains(out, "Hunter2pw") {
			t.Errorf("Sprintf(%q, opts) shows the password: %s", verb, out)
		}
		if out := fmt.Sprintf(verb, &o); strings.Contains(out, "Hunter2pw") {
			t.Errorf("Sprintf(%q, &opts) shows the password: %s", verb, out)
		}
	}
}

// A URL whose user info holds an unescaped '#', '/', '?' or '@' that would
// cut it short is refused with an error that says to percent-encode, and
// shows no piece of the password; never read into the wrong fields.
func TestParseURLReservedChars(t *testing.T) {
	const pw = "Hunter2"
	cases := []string{
		// '#': the rest would be a fragment, the host the password's head.
		"redis://admin:4242#x@node7",
		"redis://admin:" + pw + "#x@node7",
		"redis://admin:" + pw + "#x@node7:6379/1",
		"rediss://:" + pw + "#@h",
		"valkey://" + pw + "#x@h",
		"redis://h#frag", // no fragment in a Redis URL
		// '/': the rest would be the path (the database).
		"redis://admin:" + pw + "/5@node7",
		"redis://admin:4242/5@node7", // would be host admin, port 4242, db "5@node7"
		"redis://:" + pw + "/x@h:6380",
		// '?': the rest would be the query.
		"redis://admin:" + pw + "?db=1@node7",
		"redis://admin:" + pw + "?client_name=x@node7", // would be host admin, name "x@node7"
		"valkeys://:" + pw + "?@h",
		// '@' then a delimiter: the last '@' is in the path or query.
		"redis://admin:" + pw + "@x/y@node7",
		"redis://admin:" + pw + "@x?y@node7",
		"redis://h?client_name=a@b", // an '@' in a query value must be %40
		// unix: after the user info comes the path.
		"unix://alice:" + pw + "/x@/tmp/r.sock",
		"unix://alice:" + pw + "?x@/tmp/r.sock",
		"unix://:" + pw + "@x/y@/tmp/r.sock",
		"unix:///" + pw + "@/tmp/r.sock", // a password beginning with '/'
		"unix://alice:" + pw + "#x@/tmp/r.sock",
		"unix:///tmp/r.sock#x",
	}
	for _, u := range cases {
		o, err := conn.ParseURL(u)
		if err == nil {
			t.Errorf("ParseURL(%q) = %s, want an error", u, o)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, "percent-encoded") || !strings.Contains(msg, "%23") {
			t.Errorf("ParseURL(%q): %v, want the advice to percent-encode", u, err)
		}
		for _, piece := range []string{pw, "4242", "node7", "admin", "frag", "tmp"} {
			if strings.Contains(msg, piece) {
				t.Errorf("ParseURL(%q): error shows %q: %v", u, piece, err)
			}
		}
	}
}
