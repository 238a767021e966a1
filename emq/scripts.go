package emq

import _ "embed" // the scripts are embedded from scripts/*.lua

// The six core transitions of echomq:6.0.0, byte for byte the files in
// scripts/. Each file's header names its KEYS, ARGV and replies.
var (
	//go:embed scripts/enqueue.lua
	EnqueueLua string // KEYS row, pending; ARGV id, payload → 1 | 0 | EMQKIND
	//go:embed scripts/claim.lua
	ClaimLua string // KEYS pending, active, base; ARGV lease_ms → {id, payload, attempts} | {}
	//go:embed scripts/complete.lua
	CompleteLua string // KEYS active, row; ARGV id, token, retention_ms → 1 | 0
	//go:embed scripts/retry.lua
	RetryLua string // KEYS active, row, pending, delayed, dead; ARGV id, token, delay_ms, max_attempts, error → 2 | 1 | 0
	//go:embed scripts/promote.lua
	PromoteLua string // KEYS delayed, pending, base; ARGV limit → count
	//go:embed scripts/reap.lua
	ReapLua string // KEYS active, pending, dead, base; ARGV limit, max_attempts → count
)

// Extension scripts: new transitions beside the core, never changing a core
// script's keys, fields or replies.
var (
	//go:embed scripts/claim_batch.lua
	ClaimBatchLua string // KEYS pending, active, base; ARGV lease_ms, n → {id1, payload1, attempts1, ...} | {}
	//go:embed scripts/extend.lua
	ExtendLua string // KEYS active, row; ARGV id, token, lease_ms → 1 | 0
	//go:embed scripts/enqueue_at.lua
	EnqueueAtLua string // KEYS row, delayed; ARGV id, payload, delay_ms → 1 | 0 | EMQKIND
	//go:embed scripts/complete_batch.lua
	CompleteBatchLua string // KEYS active, base; ARGV retention_ms, id1, token1, ... → {1|0, ...}
	//go:embed scripts/enqueue_batch.lua
	EnqueueBatchLua string // KEYS pending, base; ARGV id1, payload1, ... → {1|0, ...} | EMQKIND
	//go:embed scripts/settle_claim.lua
	SettleClaimLua string // KEYS pending, active, delayed, dead, base; ARGV lease_ms, n, retention_ms, nc, nr, nx, completions, retries, releases → {settled, jobs}
)

// Operation scripts: extensions for the operator's verbs (requeue, delete,
// trim, stats). They run only as scripts, whatever the queue's executor.
var (
	//go:embed scripts/requeue.lua
	RequeueLua string // KEYS dead, pending, base; ARGV id1, id2, ... → {1|0, ...}
	//go:embed scripts/requeue_dead.lua
	RequeueDeadLua string // KEYS dead, pending, base; ARGV since_ms, before_ms, prefix, limit, scan, after_id, after_ms → {moved, examined, cursor_id, cursor_ms, more}
	//go:embed scripts/delete.lua
	DeleteLua string // KEYS pending, active, delayed, dead, base; ARGV id1, id2, ... → {state|'', ...}
	//go:embed scripts/trim_dead.lua
	TrimDeadLua string // KEYS dead, base; ARGV max_age_ms, max_count, limit → count
	//go:embed scripts/stats.lua
	StatsLua string // KEYS pending, active, delayed, dead, base → {now_ms, pending, active, delayed, dead, due, expired, paused, oldest}
)

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
// protocol order, then the extensions. The slice is the caller's own.
func Scripts() []ScriptSource {
	return []ScriptSource{
		{"enqueue", 2, true, EnqueueLua},
		{"claim", 3, true, ClaimLua},
		{"complete", 2, true, CompleteLua},
		{"retry", 5, true, RetryLua},
		{"promote", 3, true, PromoteLua},
		{"reap", 4, true, ReapLua},
		{"claim_batch", 3, false, ClaimBatchLua},
		{"extend", 2, false, ExtendLua},
		{"enqueue_at", 2, false, EnqueueAtLua},
		{"complete_batch", 2, false, CompleteBatchLua},
		{"enqueue_batch", 2, false, EnqueueBatchLua},
		{"settle_claim", 5, false, SettleClaimLua},
		{"requeue", 3, false, RequeueLua},
		{"requeue_dead", 3, false, RequeueDeadLua},
		{"delete", 5, false, DeleteLua},
		{"trim_dead", 2, false, TrimDeadLua},
		{"stats", 5, false, StatsLua},
	}
}
