package conn_test

import (
	"encoding/hex"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
)

// verbs are the fmt directives the redaction tests print with: the usual
// ones, flags and widths, and verbs that fmt would otherwise answer by
// walking every field (%d, %t, …).
var verbs = []string{
	"%v", "%+v", "%#v", "%s", "%q", "%#q", "%x", "%X", "% x", "%d", "%t",
	"%o", "%b", "%e", "%g", "%c", "%U", "%T", "%p", "%60v", "%-60s", "%.10s",
}

// assertRedacted prints every value in vals with every verb, alone and
// inside exported struct fields, slices and maps, and fails when any
// output shows secret, in clear or in hex. A pointer is also printed from
// an unexported field with the verbs for which fmt shows its address.
//
// Out of reach, and so not tried: a struct held by value in an unexported
// field, and a pointer there printed with a verb a pointer does not take
// (%s, %q, %t, …), or a value printed with %p. fmt then prints the
// struct's fields without asking it (see print.go).
func assertRedacted(t *testing.T, secret string, vals ...any) {
	t.Helper()
	hexSecret := hex.EncodeToString([]byte(secret))
	type wrapper struct {
		Exported any
		hidden   any
	}
	check := func(i int, v any, verb string, arg any) {
		t.Helper()
		if k := reflect.ValueOf(arg).Kind(); verb == "%p" && k != reflect.Pointer && k != reflect.Slice && k != reflect.Map {
			return // %p of a struct: fmt prints it raw
		}
		out := fmt.Sprintf(verb, arg)
		if strings.Contains(out, secret) || strings.Contains(strings.ToLower(out), hexSecret) {
			t.Errorf("value %d (%T): Sprintf(%q, %T) shows the password: %s", i, v, verb, arg, out)
		}
	}
	for i, v := range vals {
		for _, verb := range verbs {
			check(i, v, verb, v)
			for _, arg := range []any{wrapper{Exported: v}, &wrapper{Exported: v}, []any{v}, map[string]any{"k": v}} {
				check(i, v, verb, arg)
			}
		}
		if reflect.ValueOf(v).Kind() == reflect.Pointer {
			for _, verb := range []string{"%v", "%+v", "%#v", "%d", "%x", "%X", "%p"} {
				check(i, v, verb, wrapper{hidden: v})
				check(i, v, verb, &wrapper{hidden: v})
			}
		}
	}
}

// Options, by value and by pointer, never show the password, in any
// verb: %d and %t would print every field. The Client's fields show when
// set.
func TestFormatOptionsRedacts(t *testing.T) {
	const pw = "Hunter2pw"
	o := conn.Options{Addr: "h:1", Username: "alice", Password: pw, DB: 3, ClientName: "w"}
	co := o
	co.MinBackoff, co.MaxBackoff, co.BlockingConns = 10*time.Millisecond, time.Second, 2
	assertRedacted(t, pw, o, &o, co, &co)

	if got, want := fmt.Sprintf("%+v", co), o.String()+" min_backoff=10ms max_backoff=1s blocking_conns=2"; got != want {
		t.Errorf("%%+v of Options with a Client's fields = %q, want %q", got, want)
	}
	if got, want := fmt.Sprintf("%#v", co), co.String(); got != want {
		t.Errorf("%%#v of Options with a Client's fields = %q, want %q", got, want)
	}
	if got, want := fmt.Sprintf("%#v", o), o.String(); got != want {
		t.Errorf("%%#v of Options = %q, want %q", got, want)
	}
	if got, want := fmt.Sprintf("%q", o), fmt.Sprintf("%q", o.String()); got != want {
		t.Errorf("%%q of Options = %s, want %s", got, want)
	}
	if got, want := fmt.Sprintf("%d", o), "%!d(conn.Options="+o.String()+")"; got != want {
		t.Errorf("%%d of Options = %q, want %q", got, want)
	}
	if got, want := fmt.Sprintf("%-75s|", o), fmt.Sprintf("%-75s|", o.String()); got != want {
		t.Errorf("width: %q, want %q", got, want)
	}
	for _, s := range []string{o.String(), co.String()} {
		for _, want := range []string{"h:1", "user=alice", "password=REDACTED", "db=3", "name=w"} {
			if !strings.Contains(s, want) {
				t.Errorf("%q does not show %q", s, want)
			}
		}
	}
}

// A *Conn and a *Client print as a short description of their options,
// password redacted, in every verb; fmt would otherwise walk their
// unexported fields, options and all.
func TestFormatConnClientRedacts(t *testing.T) {
	const pw = "Hunter2-format"
	s := startServer(t, servertest.Options{Password: pw})
	o := conn.Options{Addr: s.Addr, Username: "default", Password: pw, ClientName: "fmt-test"}
	c := dial(t, o)
	cl, err := conn.NewClient(testCtx(t), o)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var cur *conn.Conn // a dedicated connection of the Client's
	if err := cl.Dedicated(testCtx(t), func(c *conn.Conn) error { cur = c; return nil }); err != nil {
		t.Fatal(err)
	}
	assertRedacted(t, pw, c, cl, cur)

	for _, tc := range []struct {
		v      any
		prefix string
	}{{c, "conn.Conn{"}, {cl, "conn.Client{"}, {cur, "conn.Conn{"}} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
			out := fmt.Sprintf(verb, tc.v)
			if !strings.HasPrefix(out, tc.prefix) || !strings.HasSuffix(out, "}") {
				t.Errorf("Sprintf(%q, %T) = %q, want %s…}", verb, tc.v, out, tc.prefix)
			}
			for _, want := range []string{"tcp://" + s.Addr, "user=default", "password=REDACTED", "db=0", "protocol=3", "name=fmt-test"} {
				if !strings.Contains(out, want) {
					t.Errorf("Sprintf(%q, %T) = %q, want it to show %q", verb, tc.v, out, want)
				}
			}
		}
	}
	if got, want := fmt.Sprintf("%v", cl), "conn.Client{"+o.String()+" min_backoff="; !strings.HasPrefix(got, want) || !strings.Contains(got, " blocking_conns=") {
		t.Errorf("%%v of Client = %q, want %s… max_backoff=… blocking_conns=…}", got, want)
	}
	if got, want := fmt.Sprintf("%v", c), "conn.Conn{"+o.String()+"}"; got != want {
		t.Errorf("%%v of Conn = %q, want %q", got, want)
	}
	if got := fmt.Sprintf("%p", c); !strings.HasPrefix(got, "0x") {
		t.Errorf("%%p of Conn = %q, want an address", got)
	}

	var nc *conn.Conn
	var ncl *conn.Client
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		if got := fmt.Sprintf(verb, nc); got != "<nil>" {
			t.Errorf("Sprintf(%q, nil *Conn) = %q, want <nil>", verb, got)
		}
		if got := fmt.Sprintf(verb, ncl); got != "<nil>" {
			t.Errorf("Sprintf(%q, nil *Client) = %q, want <nil>", verb, got)
		}
	}
}

// No dial error shows the password, right or wrong, on the RESP3 (HELLO
// AUTH) and RESP2 (AUTH) paths, whether the options come from a URL or
// not, through Dial and NewClient.
func TestSecretNotInDialErrors(t *testing.T) {
	const pw = "Hunter2-right"
	const wrong = "Xyzzy9-wrong"
	s := startServer(t, servertest.Options{Password: pw})
	for _, proto := range []int{3, 2} {
		fromURL, err := conn.ParseURL(fmt.Sprintf("redis://default:%s@%s?protocol=%d", wrong, s.Addr, proto))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range []conn.Options{
			fromURL,
			{Addr: s.Addr, Password: wrong, Protocol: proto},
			{Addr: s.Addr, Username: "nobody", Password: pw, Protocol: proto},
			{Addr: s.Addr, Username: "nobody", Password: wrong, Protocol: proto},
		} {
			_, err := conn.Dial(testCtx(t), o)
			if err == nil {
				t.Fatalf("RESP%d: Dial with %v succeeded", proto, o)
			}
			_, cerr := conn.NewClient(testCtx(t), o)
			if cerr == nil {
				t.Fatalf("RESP%d: NewClient with %v succeeded", proto, o)
			}
			for _, e := range []error{err, cerr} {
				for _, out := range []string{e.Error(), fmt.Sprintf("%+v", e), fmt.Sprintf("%#v", e)} {
					if strings.Contains(out, pw) || strings.Contains(out, wrong) {
						t.Errorf("RESP%d: dial error shows a password: %s", proto, out)
					}
				}
			}
		}
	}
	// Unreachable: the transport error names the address only.
	_, err := conn.Dial(testCtx(t), conn.Options{Addr: "127.0.0.1:1", Password: pw, DialTimeout: 2 * time.Second})
	if err == nil || strings.Contains(err.Error(), pw) || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("unreachable: %v", err)
	}
}
