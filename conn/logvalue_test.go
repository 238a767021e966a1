package conn_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/resp"
)

// Options logged with slog's JSON handler print as a group of their
// settings, the password redacted and the functions named, not
// "!ERROR … func(resp.Value)"; the text handler shows no password
// either.
func TestOptionsLogValue(t *testing.T) {
	o := conn.Options{
		Addr: "10.0.0.1:6380", Username: "alice", Password: "hunter2", DB: 2, ClientName: "app",
		OnPush:     func(resp.Value) {},
		Dialer:     func(context.Context, string, string) (net.Conn, error) { return nil, nil },
		Hooks:      []conn.Hook{{}, {}},
		Logger:     slog.Default(),
		Limits:     resp.Limits{MaxBulk: 1 << 20},
		MinBackoff: time.Millisecond,
	}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("dialing", "opts", o)
	line := buf.String()
	require.NotContains(t, line, "!ERROR")
	require.NotContains(t, line, "hunter2")
	var rec struct{ Opts map[string]any }
	require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
	require.Equal(t, "10.0.0.1:6380", rec.Opts["addr"])
	require.Equal(t, "alice", rec.Opts["user"])
	require.Equal(t, "REDACTED", rec.Opts["password"])
	require.EqualValues(t, 2, rec.Opts["db"])
	require.EqualValues(t, 3, rec.Opts["protocol"])
	require.Equal(t, "app", rec.Opts["client_name"])
	require.Equal(t, "set", rec.Opts["on_push"])
	require.Equal(t, "set", rec.Opts["dialer"])
	require.Equal(t, "set", rec.Opts["logger"])
	require.EqualValues(t, 2, rec.Opts["hooks"])
	require.NotContains(t, rec.Opts, "observer")

	buf.Reset()
	slog.New(slog.NewTextHandler(&buf, nil)).Info("dialing", "opts", o)
	require.NotContains(t, buf.String(), "hunter2")
	require.True(t, strings.Contains(buf.String(), "opts.password=REDACTED"), buf.String())
}
