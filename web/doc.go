// Package web is the EchoMQ dashboard: an [http.Handler] that shows the
// queues and their jobs and runs the operator's actions on them, served
// from the host's own binary. Its templates, script and style sheet are
// embedded (go:embed): nothing to build, no Node toolchain, no network.
// The pages are rendered on the server; one small script (static/app.js,
// no library) refreshes the counts by polling and ticks "select all".
//
//	h, err := web.New(ctx, web.Options{Sender: client, Prefix: "/emq", Queues: []string{"mail"}})
//	defer h.Close()
//	mux.Handle("/emq/", h)
//
// `emq web -addr 127.0.0.1:8080 redis://host:6379` (cmd/emq) serves it on
// its own.
//
// # Pages
//
//	/                          every queue: pending, active, delayed, dead, due,
//	                           expired leases, lag, paused; a chart per queue
//	/queues/{q}?state=…        the queue's counts, actions, chart, and one set's
//	                           jobs, a page at a time (after=/before= cursors)
//	/queues/{q}/dead?prefix=…  the dead set by error prefix and age (older=,
//	                           newer= durations), bounded per request
//	/queues/{q}/jobs/{id}      a job: row, error, attempts, timeline, payload
//	/queues/{q}/jobs/{id}/payload   the raw payload, as a download
//	/queues/{q}/chart.svg      the sampler's chart, an SVG image
//	/api/overview, /api/queues/{q}  the counts as JSON (what the pages poll)
//
// The job system's pages (package jobs; emq's lanes and flows), per queue:
//
//	/queues/{q}/types          jobs per task type over a sample: the first 200
//	                           ids of each set, each type read from the first
//	                           4 KiB of its payload (emq.Queue.PayloadHeads)
//	/queues/{q}/schedules      each schedule's last slot (emq:{q}:cron) and the
//	                           job enqueued for it (emq:{q}:cronjobs, LIMIT);
//	                           expression, zone and next slot for those of
//	                           Options.Schedulers
//	/queues/{q}/uniques?key=…  a unique key's owner and state
//	                           (emq.Queue.UniqueOwner), and the keys echoed by
//	                           the sampled jobs' envelopes
//	/queues/{q}/workers        live workers (emq.Queue.Workers, at most 1,000;
//	                           gone ones hidden): host, pid, queues,
//	                           concurrency, started, last heartbeat
//	/queues/{q}/limits         the queue's limits, active now, the rate window
//	/queues/{q}/lanes          busy and halted lanes, an HSCAN page (COUNT 50)
//	                           of emq:{q}:lanestate at a time, with Resume
//	/queues/{q}/flows[/{f}]    flows in progress (an HSCAN page of
//	                           emq:{q}:flowjob), a flow's state and jobs
//	                           (emq.Queue.Flow), with Cancel
//
// The job list shows each job's task type, the job page its envelope
// (type, retries, timeout, retention, unique key), its lane and its flow.
// Read-only, workers and flows are read with plain reads (the verbs
// prune expired workers and repair flows: writes).
//
// Completed jobs whose rows are kept for retention are in no set: they
// cannot be counted without a scan, so no page shows their number.
//
// # Which queues
//
// The dashboard never scans the keyspace (no KEYS, no SCAN). It shows the
// queues the host names (Options.Queues) and, with Options.Registry,
// those of [RegistryKey], a sorted set of names that producers and
// consumers keep with [RegisterQueues]: a plain ZADD outside any script,
// on a key of no queue's slot, so no transition touches it; on a cluster
// each queue's keys stay on their own slot and the registry on its own.
// A valid queue name neither listed nor registered answers 404.
//
// # Cost
//
// No page runs an O(N) command. A queue's counts are one emq.Queue.Stats
// (a read-only script of ZCARD, ZCOUNT, ZRANGE 0 0 and HGET: O(log N)),
// shared by every viewer for Options.StatsTTL (1s). A list is one ZRANGE
// … LIMIT from a cursor, never an offset: BYLEX in pending (every score
// 0), BYSCORE elsewhere, from the cursor's (score, id) with the members
// of that score already shown dropped; when more than a few share it,
// the page steps past them by ZRANK (O(log N)). Each row of a list is an
// HMGET of state, attempts and error and an HSTRLEN of the payload, in
// one pipeline: payloads are loaded only on a job's page, where at most
// 4 KiB are shown. A dead filter examines at most 1,000 dead ids per
// request and hands out a cursor to go on. TestScaleMillion shows it
// with 1,000,000 jobs: every page in well under 100 ms, SLOWLOG empty.
//
// # Throughput
//
// The wire keeps no count of completions, so the dashboard samples: a
// goroutine (started by New, stopped by [Handler.Close]) reads every
// queue's counts each Options.SampleEvery into a ring of
// Options.Samples per queue, and the chart draws the sets' sizes and,
// per minute, the dead set's growth and the net drain. A host that runs
// its workers in-process passes Options.Counters (say, from
// emq.WorkerStats) and the chart shows completed and failed per minute.
//
// # Actions
//
// Pause and resume; requeue (dead), run now (delayed, before its due
// time), cancel (pending, delayed or active: it ends dead with
// "cancelled") and delete a job; the same over a selection of ids (at
// most 1,000); requeue or delete the dead jobs a filter selects and trim
// the dead set, in atomic calls of at most 1,000 jobs from a cursor, for
// at most 10 s per request (delete by filter is emq.Queue.DeleteDead:
// each job deleted only if it is still dead when its call runs); resume
// a halted lane; cancel a flow. Every action is a POST form answered by
// a 303 back to the page.
//
// # Security
//
//   - Options.ReadOnly registers no action route at all and shows no
//     button; New sets it itself on a replica.
//   - Options.Middleware wraps every route: the host's authentication.
//   - CSRF: every action must carry the token of the emq_csrf cookie
//     (random, HttpOnly, SameSite=Strict) in its csrf field, and pass
//     net/http's CrossOriginProtection (Origin, Sec-Fetch-Site); else 403
//     before anything is read or changed.
//   - Queue names are checked with emq.ValidQueue and ids with
//     emq.ValidID before any key is built: bad input is 400 with a
//     message, an unknown queue or job 404.
//   - Everything a job carries is escaped by html/template; invalid
//     UTF-8 shows as U+FFFD, binary payloads as hex; the raw payload is
//     served as application/octet-stream, attachment.
//   - Every response has a Content-Security-Policy without inline
//     script or style (script-src 'self', frame-ancestors 'none'),
//     X-Content-Type-Options nosniff, X-Frame-Options DENY,
//     Referrer-Policy no-referrer.
//
// # Extending
//
// Options.Sections adds pages to the navigation ([Section]): the job
// system's task types, schedules, unique locks, workers, lanes and flows
// can each be one, rendered into the dashboard's layout under its
// headers and the host's middleware.
package web
