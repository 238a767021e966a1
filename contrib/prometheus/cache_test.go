package emqprom_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/cache"
	"github.com/echomq/echomq-go/conn"
	emqprom "github.com/echomq/echomq-go/contrib/prometheus"
	"github.com/echomq/echomq-go/internal/servertest"
)

// TestScrapeCache: a watched client-side cache reports its hits, misses,
// invalidations and what it holds, as the cache counted them.
func TestScrapeCache(t *testing.T) {
	servertest.Need(t, srv)
	srv.Flush(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	col := emqprom.New(emqprom.Options{})
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(col))
	hs := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	defer hs.Close()

	c, err := cache.New(ctx, cache.Options{Options: conn.Options{Addr: srv.Addr}})
	require.NoError(t, err)
	defer c.Close()
	col.WatchCache("profiles", c)
	writer, err := conn.Dial(ctx, conn.Options{Addr: srv.Addr})
	require.NoError(t, err)
	defer writer.Close()

	_, err = writer.Do(ctx, "SET", "p:1", "v1")
	require.NoError(t, err)
	for range 3 { // one miss, then two hits
		v, ok, err := c.Get(ctx, "p:1", time.Minute)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, "v1", string(v))
	}
	_, err = writer.Do(ctx, "SET", "p:1", "v2") // invalidates the entry
	require.NoError(t, err)
	require.NoError(t, c.Sync(ctx))

	st := c.Stats()
	require.EqualValues(t, 2, st.Hits)
	require.EqualValues(t, 1, st.Misses)
	require.EqualValues(t, 1, st.Invalidations)
	fams := scrape(t, hs.URL)
	l := map[string]string{"cache": "profiles"}
	require.Equal(t, 2.0, value(t, fams, "emq_cache_hits_total", l))
	require.Equal(t, 1.0, value(t, fams, "emq_cache_misses_total", l))
	require.Equal(t, 1.0, value(t, fams, "emq_cache_invalidations_total", l))
	require.Equal(t, float64(st.Entries), value(t, fams, "emq_cache_entries", l))
	require.Equal(t, float64(st.Bytes), value(t, fams, "emq_cache_bytes", l))
}
