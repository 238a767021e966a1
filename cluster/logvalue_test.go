package cluster_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/cluster"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/resp"
)

// Options logged with slog's JSON handler print as their String: the
// password redacted, no "!ERROR" for a function field.
func TestOptionsLogValue(t *testing.T) {
	o := cluster.Options{Node: conn.Options{Password: "hunter2", OnPush: func(resp.Value) {}}, Seeds: []string{"10.0.0.1:7000"}}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("opening", "opts", o)
	require.NotContains(t, buf.String(), "!ERROR")
	require.NotContains(t, buf.String(), "hunter2")
	var rec struct{ Opts string }
	require.NoError(t, json.Unmarshal(buf.Bytes(), &rec), buf.String())
	require.Contains(t, rec.Opts, "password=REDACTED")
	require.Equal(t, o.String(), rec.Opts)
}
