package conn

import (
	"fmt"
	"github.com/echomq/echomq-go/internal/redact"
)

// Printing never shows a password. fmt prints a struct by walking its
// fields, unexported ones too, without calling their String methods; and
// for verbs other than v, s, q, x and X (%d, %t, …) it walks even a type
// that has a String method. So Options, *Conn and *Client implement
// fmt.Formatter: every verb prints their String, which holds
// "password=REDACTED" in place of the password.
//
// What fmt reaches without asking the value is beyond any method: an
// Options held by value in an unexported field of the caller's struct,
// and a *Conn or *Client held in an unexported field and printed with a verb a pointer does not take (%s, %q, %t: fmt then
// prints the pointed-to struct raw, and a Conn holds its Options by
// value). Print the value itself, or hold it in an exported field.

// Format prints String for any verb (%q quotes it; %x and %X give it in
// hex, as for a string), so that no verb shows the password: %d or %t
// would otherwise print every field, the password among them.
func (o Options) Format(f fmt.State, verb rune) {
	redact.Format(f, verb, "conn.Options", o.String())
}

// String describes the connection by its options, password redacted:
// "conn.Conn{tcp://127.0.0.1:6379 password=REDACTED db=0 protocol=3 …}".
// A nil *Conn is "<nil>".
func (c *Conn) String() string {
	if c == nil {
		return "<nil>"
	}
	return "conn.Conn{" + c.opts.String() + "}"
}

// Format prints String for any verb (%q quotes it), so that %+v and %#v,
// which would otherwise print every field of the Conn, its options among
// them, show no password.
func (c *Conn) Format(f fmt.State, verb rune) {
	redact.Format(f, verb, "*conn.Conn", c.String())
}

// String describes the client by its options, password redacted:
// "conn.Client{tcp://127.0.0.1:6379 password=REDACTED db=0 …}". A nil
// *Client is "<nil>".
func (cl *Client) String() string {
	if cl == nil {
		return "<nil>"
	}
	return "conn.Client{" + cl.opts.String() + "}"
}

// Format prints String for any verb, as Conn.Format does.
func (cl *Client) Format(f fmt.State, verb rune) {
	redact.Format(f, verb, "*conn.Client", cl.String())
}
