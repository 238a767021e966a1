package emq

import (
	"context"
	"strings"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/resp"
)

// CheckFence reads the wire fence, [VersionKey], and decides whether this
// package may speak to the server:
//
//   - absent: it is set to [Version] with SET NX; when another client won
//     that race, the value it wrote is read back and judged instead;
//   - [Version], or another minor or patch of the same major: go on (nil);
//   - another major, or a value that is no "echomq:MAJOR.MINOR.PATCH":
//     a *[FenceError] naming both versions, matching [ErrFence].
//
// [Open] calls it; call it directly to check a server without a queue.
func CheckFence(ctx context.Context, s conn.Sender) error {
	for range 3 {
		got, ok, err := getString(ctx, s, VersionKey)
		if err != nil {
			return err
		}
		if ok {
			return judgeFence(got)
		}
		set, err := setNX(ctx, s, VersionKey, Version)
		if err != nil {
			return err
		}
		if set {
			return nil
		}
		// NX lost the race to another client: read what it wrote.
	}
	return &FenceError{Server: "(absent, but SET NX refused)", Client: Version}
}

// judgeFence accepts a version of this package's major and refuses any
// other value.
func judgeFence(server string) error {
	if server == Version {
		return nil
	}
	if sm, ok := wireMajor(server); ok {
		if cm, _ := wireMajor(Version); sm == cm {
			return nil
		}
	}
	return &FenceError{Server: server, Client: Version}
}

// wireMajor returns MAJOR of "echomq:MAJOR.MINOR.PATCH", each part decimal
// digits, or false when v has another shape.
func wireMajor(v string) (string, bool) {
	rest, ok := strings.CutPrefix(v, "echomq:")
	if !ok {
		return "", false
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 3 {
		return "", false
	}
	for _, p := range parts {
		if p == "" || strings.Trim(p, "0123456789") != "" {
			return "", false
		}
	}
	return parts[0], true
}

// getString runs GET key: the value and true, or false when key is absent.
func getString(ctx context.Context, s conn.Sender, key string) (string, bool, error) {
	var buf [64]byte
	var val string
	var found bool
	err := wire.DoFunc(ctx, s, resp.Command(buf[:0], "GET", key), func(v resp.Value) error {
		switch v.Type {
		case resp.Null:
		case resp.BulkString, resp.SimpleString, resp.Verbatim:
			val, found = string(v.VerbatimText()), true
		default:
			return badReply("GET "+key, v, "a string or null")
		}
		return nil
	})
	return val, found, err
}

// setNX runs SET key val NX: true when it was set.
func setNX(ctx context.Context, s conn.Sender, key, val string) (bool, error) {
	var buf [96]byte
	var set bool
	err := wire.DoFunc(ctx, s, resp.Command(buf[:0], "SET", key, val, "NX"), func(v resp.Value) error {
		switch {
		case v.Type == resp.Null:
		case v.Type == resp.SimpleString && v.Equal("OK"):
			set = true
		default:
			return badReply("SET "+key+" NX", v, "OK or null")
		}
		return nil
	})
	return set, err
}
