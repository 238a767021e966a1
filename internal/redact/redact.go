// Package redact prints the descriptions of values that hold a secret:
// the packages whose types hold a password (conn, cluster, cache) make
// those types fmt.Formatters that print a description with the password
// left out, through Format.
package redact

import "fmt"

// Format prints s, a description that holds no secret, for verb: as a
// string for v, s, q, x and X, with the flags, width and precision given
// (except %#v, which prints s as it is, as GoString would), and as fmt's
// bad-verb form, "%!d(typ=s)", for any other verb.
func Format(f fmt.State, verb rune, typ, s string) {
	switch {
	case verb == 'v' && f.Flag('#'):
		fmt.Fprint(f, s)
	case verb == 'v' || verb == 's' || verb == 'q' || verb == 'x' || verb == 'X':
		fmt.Fprintf(f, fmt.FormatString(f, verb), s)
	default:
		fmt.Fprintf(f, "%%!%c(%s=%s)", verb, typ, s)
	}
}
