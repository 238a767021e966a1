package emqprom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/echomq/echomq-go/cache"
)

// CacheStats is what a watched client-side cache gives at each scrape:
// *cache.Cache and *cache.ClusterCache have it.
type CacheStats interface {
	Stats() cache.Stats
}

// watchedCache is a cache read at each scrape, by its label.
type watchedCache struct {
	name string
	c    CacheStats
}

// cacheMetrics are the descriptors of the client-side cache's series,
// labelled by the name given to WatchCache.
type cacheMetrics struct {
	hits, misses, invalidations, flushes, evictions, discarded, tooLarge, reconnects *prometheus.Desc
	entries, bytes                                                                   *prometheus.Desc
}

func (m *cacheMetrics) init(ns string, cl prometheus.Labels) {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(ns, "cache", name), help, []string{"cache"}, cl)
	}
	m.hits = d("hits_total", "Cached reads served from memory.")
	m.misses = d("misses_total", "Cached reads served from the server.")
	m.invalidations = d("invalidations_total", "Cached replies dropped because the server invalidated their key.")
	m.flushes = d("flushes_total", "Times the whole cache was emptied (a flush invalidation, a lost connection, Close).")
	m.evictions = d("evictions_total", "Cached replies dropped to stay within MaxBytes.")
	m.discarded = d("discarded_total", "Replies not kept because an invalidation came between the read's send and its reply.")
	m.tooLarge = d("too_large_total", "Replies not kept for being over MaxEntryBytes.")
	m.reconnects = d("reconnects_total", "Tracked sessions dialed after a fault.")
	m.entries = d("entries", "Replies the cache holds now.")
	m.bytes = d("bytes", "Memory the cache holds now, bookkeeping included.")
}

func (m *cacheMetrics) describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.hits, m.misses, m.invalidations, m.flushes, m.evictions, m.discarded, m.tooLarge, m.reconnects, m.entries, m.bytes} {
		ch <- d
	}
}

// collect sends w's counters, read once.
func (m *cacheMetrics) collect(ch chan<- prometheus.Metric, w watchedCache) {
	st := w.c.Stats()
	counter := func(d *prometheus.Desc, v uint64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), w.name)
	}
	counter(m.hits, st.Hits)
	counter(m.misses, st.Misses)
	counter(m.invalidations, st.Invalidations)
	counter(m.flushes, st.Flushes)
	counter(m.evictions, st.Evictions)
	counter(m.discarded, st.Discarded)
	counter(m.tooLarge, st.TooLarge)
	counter(m.reconnects, st.Reconnects)
	ch <- prometheus.MustNewConstMetric(m.entries, prometheus.GaugeValue, float64(st.Entries), w.name)
	ch <- prometheus.MustNewConstMetric(m.bytes, prometheus.GaugeValue, float64(st.Bytes), w.name)
}

// WatchCache adds a client-side cache (package cache) whose counters each
// scrape reports, labelled cache=name: emq_cache_hits_total,
// misses_total, invalidations_total, flushes_total, evictions_total,
// discarded_total, too_large_total, reconnects_total, and the gauges
// emq_cache_entries and emq_cache_bytes. Reading them sends nothing to
// the server. A name watched again is replaced.
func (c *Collector) WatchCache(name string, s CacheStats) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, w := range c.caches {
		if w.name == name {
			c.caches[i].c = s
			return
		}
	}
	c.caches = append(c.caches, watchedCache{name: name, c: s})
}
