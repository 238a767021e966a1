// Package cliredact keeps a command's messages from echoing a password
// given on its command line: an argument that may be a server URL or hold
// a password (it has "://" or an '@') is never quoted, and every message
// a command prints can pass through Writer, which replaces each such
// argument, and the password of each URL, with NotShown.
//
// It is the rule of cmd/emqbench (whose copy predates this package) and
// cmd/emq.
package cliredact

import (
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// NotShown stands for an argument that may hold a password.
const NotShown = "<not shown: it may hold a password>"

// LooksSecret reports whether a command-line argument may be a server URL
// or hold a password: it has "://" or an '@'.
func LooksSecret(arg string) bool {
	return strings.Contains(arg, "://") || strings.Contains(arg, "@")
}

// Quote quotes arg for a message, or names it NotShown when it looks
// secret.
func Quote(arg string) string {
	if LooksSecret(arg) {
		return NotShown
	}
	return strconv.Quote(arg)
}

// URLHint is the advice to add to a message about args when one of them
// looks like a URL: "; a server URL goes in -url", else "".
func URLHint(args ...string) string {
	for _, a := range args {
		if LooksSecret(a) {
			return "; a server URL goes in -url"
		}
	}
	return ""
}

// Redact replaces in msg every argument of args that looks secret (and
// the value of each -flag=value that does, and the password of each that
// parses as a URL), quoted or not, with NotShown.
func Redact(msg string, args []string) string {
	for _, s := range Secrets(args) {
		msg = strings.ReplaceAll(msg, strconv.Quote(s), NotShown)
		msg = strings.ReplaceAll(msg, s, NotShown)
	}
	return msg
}

// Secrets lists the strings of args that Redact replaces, longest first
// (so that a value is not replaced inside the -flag=value that holds it
// before the whole is): each argument that looks secret, the value of a
// -flag=value, and the password of one that parses as a URL with user
// info, when it is long enough (6 bytes) not to be replaced by chance
// inside other words of a message.
func Secrets(args []string) []string {
	var out []string
	add := func(s string, min int) {
		if len(s) >= min && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for _, a := range args {
		if !LooksSecret(a) {
			continue
		}
		add(a, 1)
		if strings.HasPrefix(a, "-") {
			if _, v, ok := strings.Cut(a, "="); ok && LooksSecret(v) {
				add(v, 1)
				a = v
			}
		}
		if u, err := url.Parse(a); err == nil && u.User != nil {
			if pw, ok := u.User.Password(); ok {
				add(pw, 6)
			} else {
				add(u.User.Username(), 6) // redis://password@host
			}
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// Writer writes to W with every secret of Args replaced, as Redact does.
// A command prints its errors through one, so that none echoes a URL from
// its command line. Each Write must hold whole secrets: a message written
// in one call, as fmt.Fprintf does.
type Writer struct {
	W    io.Writer
	Args []string
}

// Write writes p, redacted, to W; it reports len(p) written on success.
func (r Writer) Write(p []byte) (int, error) {
	if _, err := io.WriteString(r.W, Redact(string(p), r.Args)); err != nil {
		return 0, err
	}
	return len(p), nil
}
