package emq

import (
	"embed"
	"slices"
)

// scriptFiles holds scripts/*.lua, byte for byte; each file's header names
// its KEYS, ARGV and replies.
//
//go:embed scripts/*.lua
var scriptFiles embed.FS

// transitions is the one table of the scripts this package sends: the six
// core transitions of echomq:6.0.0 in protocol order, then the extensions
// (new transitions beside the core, never changing a core script's keys,
// fields or replies), then the operations (the operator's verbs: requeue,
// delete, trim, stats; they run only as scripts, whatever the queue's
// executor). It is unexported and read once: [Scripts] hands out copies,
// so nothing outside can change what a queue sends.
var transitions = loadTransitions([]ScriptSource{
	{Name: "enqueue", NumKeys: 2, Core: true},  // KEYS row, pending; ARGV id, payload → 1 | 0 | EMQKIND
	{Name: "claim", NumKeys: 3, Core: true},    // KEYS pending, active, base; ARGV lease_ms → {id, payload, attempts} | {}
	{Name: "complete", NumKeys: 2, Core: true}, // KEYS active, row; ARGV id, token, retention_ms → 1 | 0
	{Name: "retry", NumKeys: 5, Core: true},    // KEYS active, row, pending, delayed, dead; ARGV id, token, delay_ms, max_attempts, error → 2 | 1 | 0
	{Name: "promote", NumKeys: 3, Core: true},  // KEYS delayed, pending, base; ARGV limit → count
	{Name: "reap", NumKeys: 4, Core: true},     // KEYS active, pending, dead, base; ARGV limit, max_attempts → count
	{Name: "claim_batch", NumKeys: 3},          // KEYS pending, active, base; ARGV lease_ms, n → {id1, payload1, attempts1, ...} | {}
	{Name: "extend", NumKeys: 2},               // KEYS active, row; ARGV id, token, lease_ms → 1 | 0
	{Name: "enqueue_at", NumKeys: 2},           // KEYS row, delayed; ARGV id, payload, delay_ms → 1 | 0 | EMQKIND
	{Name: "complete_batch", NumKeys: 2},       // KEYS active, base; ARGV retention_ms, id1, token1, ... → {1|0, ...}
	{Name: "enqueue_batch", NumKeys: 2},        // KEYS pending, base; ARGV id1, payload1, ... → {1|0, ...} | EMQKIND
	{Name: "settle_claim", NumKeys: 5},         // KEYS pending, active, delayed, dead, base; ARGV lease_ms, n, retention_ms, nc, nr, nx, completions, retries, releases → {settled, jobs}
	{Name: "requeue", NumKeys: 3},              // KEYS dead, pending, base; ARGV id1, id2, ... → {1|0, ...}
	{Name: "dead_filter", NumKeys: 3},          // KEYS dead, pending, base; ARGV action (requeue|delete), since_ms, before_ms, prefix, limit, scan, after_id, after_ms → {moved, examined, cursor_id, cursor_ms, more}
	{Name: "delete", NumKeys: 5},               // KEYS pending, active, delayed, dead, base; ARGV id1, id2, ... → {state|'', ...}
	{Name: "trim_dead", NumKeys: 2},            // KEYS dead, base; ARGV max_age_ms, max_count, limit → count
	{Name: "stats", NumKeys: 5},                // KEYS pending, active, delayed, dead, base → {now_ms, pending, active, delayed, dead, due, expired, paused, oldest}
	{Name: "run_now", NumKeys: 3},              // KEYS delayed, pending, base; ARGV id1, id2, ... → {1|0, ...}
	// job system (J1)
	{Name: "finish", NumKeys: 3},      // KEYS active, dead, base; ARGV n, {id, token, 'c'|'d', retention_ms, result|error} × n → {1|0, ...}
	{Name: "cancel", NumKeys: 5},      // KEYS pending, delayed, active, dead, base; ARGV id, error → state it was in | 'completed' | 'dead' | ''
	{Name: "worker_beat", NumKeys: 2}, // KEYS workers, base; ARGV wid, ttl_ms, field, value, ... → now_ms
	{Name: "workers", NumKeys: 2},     // KEYS workers, base; ARGV limit → {wid, {field, value, ...}, ...}
	// job system (J2)
	{Name: "unique_enqueue", NumKeys: 3}, // KEYS pending, delayed, base; ARGV mode, delay_ms, ttl_ms, (id, payload, hash)... → {1 | 4 | code..id, ...}
	{Name: "cron_fire", NumKeys: 3},      // KEYS pending, delayed, base; ARGV name, payload, ahead_ms, k, (slot_ms, id×k)... → {last, r1, id1, ...}
	{Name: "claim_limited", NumKeys: 3},  // KEYS pending, active, base; ARGV lease_ms, n → {wait_ms, {id1, payload1, attempts1, ...}}
	{Name: "set_limits", NumKeys: 1},     // KEYS meta; ARGV limit_active, rate_n, rate_ms → 1
	// lanes and flows
	{Name: "lane_enqueue", NumKeys: 2},  // KEYS delayed, base; ARGV k, name, cap, weight, halt, id1, payload1, ... → {1|0, ...}
	{Name: "lane_claim", NumKeys: 4},    // KEYS pending, active, delayed, base; ARGV lease_ms, n, reap → {reaped, id1, payload1, attempts1, ...}
	{Name: "lane_resume", NumKeys: 1},   // KEYS base; ARGV k → 1 | 0
	{Name: "flow_submit", NumKeys: 3},   // KEYS pending, delayed, base; ARGV f, n, (id, payload, d, (index, policy)×d)×n | '+', f, first, n, (id, kind, payload, d, (ref, policy)×d)×n → 1 | EMQFLOW
	{Name: "flow_complete", NumKeys: 5}, // KEYS active, pending, delayed, dead, base; ARGV 'c' id token retention result | 'r' id token delay max error | 'C' retention (id token result)×n | 's' | 'a' f [off count] | 'x' f error [off count] | 'g' f | '-' f | 'L' id target dep | 'l' n | 'e' dep label ok cause → 1|3|0 | 2|4|1|0 | {flag×n, steps} | steps | {state, total, left, failed, cancelled, id1, state1, ...} | ...
	// dashboard (issue 26): operations
	{Name: "payload_heads", NumKeys: 1}, // KEYS base; ARGV n, max_size, id1, ... → {size1, head1, ...} (a read)
	// job system (J3)
	{Name: "reap_announce", NumKeys: 4}, // KEYS active, pending, dead, base; ARGV limit, max_attempts → count (reap, each death published on done:<id>)
})

// loadTransitions fills each entry's Source from scripts/<name>.lua.
func loadTransitions(t []ScriptSource) []ScriptSource {
	for i := range t {
		b, err := scriptFiles.ReadFile("scripts/" + t[i].Name + ".lua")
		if err != nil {
			panic("emq: embedded script missing: " + err.Error())
		}
		t[i].Source = string(b)
	}
	return t
}

// source returns the embedded source of the script name.
func source(name string) string {
	for _, s := range transitions {
		if s.Name == name {
			return s.Source
		}
	}
	panic("emq: no script " + name)
}

// ScriptSource is one embedded transition script, described for a
// dispatcher: its name, how many KEYS it declares (EVAL's numkeys) and its
// source, whose SHA1 is what EVALSHA names.
type ScriptSource struct {
	Name    string // file name without ".lua": "enqueue", "claim_batch", ...
	NumKeys int    // len(KEYS), the numkeys of EVAL and EVALSHA
	Core    bool   // one of the six core transitions of echomq:6.0.0
	Source  string // the Lua source
}

// Scripts returns every embedded script: the six core transitions in
// protocol order, then the extensions, then the operations. The slice is
// the caller's own.
func Scripts() []ScriptSource { return slices.Clone(transitions) }
