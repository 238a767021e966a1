package sentinel

import (
	"context"
	"errors"
	"net"
	"strings"

	"github.com/echomq/echomq-go/internal/dial"
	"github.com/echomq/echomq-go/resp"
)

// probeRole asks a freshly dialed data node its role before the
// connection's own handshake: HELLO 2 (with AUTH when a password is set),
// whose reply names the role, so the connection stays in RESP2 for the
// handshake that follows; or, where HELLO is refused (an old server, a
// renamed or forbidden HELLO), AUTH and ROLE. It returns "master",
// "slave" (HELLO's "replica" is reported so too), "sentinel", or an
// error: the server's (a refused AUTH is the server's WRONGPASS), or the
// network's. Bounded by ctx.
func probeRole(ctx context.Context, nc net.Conn, user, password string) (string, error) {
	defer dial.Bound(ctx, nc)()
	rd := resp.NewReader(nc)
	var b []byte
	if password != "" {
		if user == "" {
			user = "default"
		}
		b = resp.AppendCommand(b, "HELLO", "2", "AUTH", user, password)
	} else {
		b = resp.AppendCommand(b, "HELLO", "2")
	}
	v, err := exchange(nc, rd, b)
	if err != nil {
		return "", err
	}
	if err := v.Err(); err != nil {
		var se *resp.ServerError
		if errors.As(err, &se) && (se.HasCode(resp.CodeWrongPass) || se.HasCode(resp.CodeNoAuth)) {
			return "", err
		}
		// No HELLO here: AUTH, then ROLE.
		b = b[:0]
		if password != "" {
			if user == "default" {
				b = resp.AppendCommand(b, "AUTH", password)
			} else {
				b = resp.AppendCommand(b, "AUTH", user, password)
			}
			if v, err = exchange(nc, rd, b); err != nil {
				return "", err
			}
			if err := v.Err(); err != nil {
				return "", err
			}
		}
		if v, err = exchange(nc, rd, resp.AppendCommand(b[:0], "ROLE")); err != nil {
			return "", err
		}
		if err := v.Err(); err != nil {
			return "", err
		}
		if len(v.Elems) == 0 {
			return "", errors.New("sentinel: empty ROLE reply")
		}
		return normRole(v.Elems[0].Text()), nil
	}
	if role := field(v, "role"); role != "" {
		return normRole(role), nil
	}
	return "", errors.New("sentinel: HELLO reply without a role")
}

// normRole spells a replica "slave", as ROLE and INFO do.
func normRole(r string) string {
	r = strings.ToLower(r)
	if r == "replica" {
		return "slave"
	}
	return r
}

// exchange writes one command and reads its reply (owned).
func exchange(nc net.Conn, rd *resp.Reader, b []byte) (resp.Value, error) {
	if _, err := nc.Write(b); err != nil {
		return resp.Value{}, err
	}
	for {
		v, err := rd.Next()
		if err != nil {
			return resp.Value{}, err
		}
		if v.Type != resp.Push {
			return v.Clone(), nil
		}
	}
}
