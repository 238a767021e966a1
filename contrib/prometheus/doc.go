// Package emqprom exports EchoMQ metrics to Prometheus: the depth of a
// queue's sets and its lag, read at each scrape; a worker's job outcomes
// and handler durations; and every command's count, duration and errors.
// It lives in a module of its own, so that the core module does not
// depend on client_golang.
//
// A [Collector] is a prometheus.Collector. Register it, then wire it to
// the three hooks of the core:
//
//	col := emqprom.New(emqprom.Options{})
//	prometheus.MustRegister(col)
//
//	// every command a connection sends (a conn.Hook)
//	cl, err := conn.NewClient(ctx, conn.Options{Addr: addr, Hooks: []conn.Hook{col.Hook()}})
//
//	// the queue's counts, read (one atomic script) at each scrape
//	q, err := emq.Open(ctx, cl, "emails")
//	col.WatchQueue(q)
//
//	// a worker's events and handler durations
//	cfg := emq.WorkerConfig{Concurrency: 16}
//	col.Instrument(&cfg, "emails")
//	w, err := emq.NewWorker(q, handler, cfg)
//
//	// a client-side cache's counters (package cache), read from memory
//	col.WatchCache("profiles", c)
//
// # Metrics
//
// With the default namespace "emq":
//
//	emq_queue_jobs{queue,state}                gauge      ids in pending, active, delayed, dead (the dead count)
//	emq_queue_lag_seconds{queue}               gauge      age of the oldest pending job (emq.QueueStats.Lag)
//	emq_queue_due_jobs{queue}                  gauge      delayed jobs due now
//	emq_queue_expired_leases{queue}            gauge      active jobs whose lease ran out
//	emq_queue_paused{queue}                    gauge      1 while paused
//	emq_queue_up{queue}                        gauge      1 when the last read of the queue succeeded
//	emq_worker_jobs_total{queue,outcome}       counter    completed, retried, dead, stale, abandoned, lease_lost, error, timed_out
//	emq_handler_duration_seconds{queue,outcome} histogram ok, error, panic
//	emq_commands_total{command,script}         counter    commands ended (script: the emq script an EVALSHA names)
//	emq_command_errors_total{command,script,code} counter commands that ended in an error (code: conn.ErrorKind: the server's, or too_large, broken, not_sent, closed, canceled, timeout, not_connected, refused, other; past 64 distinct codes, other)
//	emq_command_duration_seconds{command,script} histogram
//	emq_commands_in_flight                     gauge      commands started and not yet ended
//	emq_cache_{hits,misses,invalidations,flushes,evictions,discarded,too_large,reconnects}_total{cache} counter  cache.Stats
//	emq_cache_entries{cache}, emq_cache_bytes{cache} gauge  what the cache holds
package emqprom
