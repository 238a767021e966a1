package emqprom_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	emqprom "github.com/echomq/echomq-go/contrib/prometheus"
	"github.com/echomq/echomq-go/internal/servertest"
)

// TestErrorCodesBounded: a script replying with error codes of its own,
// 200 distinct ones, grows emq_command_errors_total by at most 64 code
// series plus "other", and every error is counted. Before, each code was
// a series of its own (200).
func TestErrorCodesBounded(t *testing.T) {
	servertest.Need(t, srv)
	ctx := context.Background()
	col := emqprom.New(emqprom.Options{})
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(col))
	hs := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	defer hs.Close()
	cl, err := conn.NewClient(ctx, conn.Options{Addr: srv.Addr, Hooks: []conn.Hook{col.Hook()}})
	require.NoError(t, err)
	defer cl.Close()
	const n = 200
	for i := range n {
		code := fmt.Sprintf("CODE%c%c", 'A'+i/26, 'A'+i%26)
		_, err := cl.Do(ctx, "EVAL", "return redis.error_reply(ARGV[1])", 0, code+" made up")
		require.Error(t, err)
	}
	fams := scrape(t, hs.URL)
	f := fams["emq_command_errors_total"]
	require.NotNil(t, f)
	var series int
	var total float64
	for _, m := range f.Metric {
		for _, l := range m.Label {
			if l.GetName() == "command" && l.GetValue() == "EVAL" {
				series++
				total += m.Counter.GetValue()
			}
		}
	}
	require.Equal(t, float64(n), total, "errors counted")
	require.LessOrEqual(t, series, 65, "code series")
	require.Equal(t, float64(n-64), value(t, fams, "emq_command_errors_total", map[string]string{"command": "EVAL", "code": "other"}))
}
