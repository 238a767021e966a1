/*
 * emq.c: the EchoMQ transitions (wire echomq:6.0.0) as native commands of a
 * Valkey/Redis module: EMQ.ENQUEUE, EMQ.CLAIM, EMQ.COMPLETE, EMQ.RETRY,
 * EMQ.PROMOTE (the core, reap stays a script) and the extensions
 * EMQ.ENQUEUE_BATCH, EMQ.CLAIM_BATCH, EMQ.COMPLETE_BATCH, EMQ.SETTLE_CLAIM,
 * EMQ.ENQUEUE_AT and EMQ.EXTEND.
 *
 * Each command is "EMQ.<NAME> numkeys key... arg...", the EVALSHA line of
 * its script (emq/scripts/<name>.lua) with the command name in place of
 * the SHA: the same KEYS, the same ARGV, the same writes, the same replies
 * and error texts. The rows keep exactly the scripts' fields (state,
 * attempts, payload, error), so rows written by either executor are the
 * other's. Numbers are read as the scripts read them (Lua's tonumber, then
 * the integer and range checks), tokens are compared as the scripts
 * compare them, and time is the server's clock in milliseconds, read once
 * per command as the scripts read TIME.
 *
 * What the module adds, all of it before the first write:
 *   - shape: numkeys must be the script's key count;
 *   - layout: every key must be emq:{q}:<its type> for one queue q (1-256
 *     bytes, no brace, no NUL), a row key emq:{q}:job:<ARGV id>;
 *   - fence: {emq}:version must hold echomq:6.x.y (EMQFENCE otherwise),
 *     unless loaded with "fence client" (below);
 *   - types: every key the call writes is of its type or absent
 *     (WRONGTYPE otherwise), so nothing is half-applied.
 * Only the keys the call declares, rows derived from its declared base and
 * the fence (read, never written) are touched.
 *
 * As the scripts meet the server (module/README.md says where not):
 *   - maxmemory: no command is deny-oom; a call is refused (OOM) where its
 *     script's first write could grow memory (HSET, ZADD) with nothing
 *     written before it, after the checks the script makes first;
 *   - ACL: the derived keys (rows, meta) and the fence (when read) are checked against
 *     the caller's user, with the access the script's calls need, before
 *     the first write (NOPERM);
 *   - keyspace events: those of the script's commands, in its order;
 *   - numbers: stored and replied as the script stores and replies them.
 * MODULE UNLOAD frees every string the module made (RedisModule_OnUnload).
 *
 * Replication: the effects are replicated (RedisModule_Replicate), as a
 * script's are: HSET/ZADD/ZREM/DEL/PEXPIREAT with the times this command
 * computed, so replicas and the AOF hold the primary's scores. A call's
 * effects go out in order, consecutive effects on one key folded into one
 * command; the server wraps them in MULTI/EXEC. The effects are built only
 * when the server could propagate them: with AOF on, or once the server
 * has forked (every replica's first sync starts from a fork's snapshot),
 * changed role, or had a replica or a backlog when the module loaded; a
 * server that has never done any of these propagates nothing (the server
 * itself drops what it is given then), and the module saves the work.
 *
 * The one server command the module calls (RedisModule_Call): a claim of
 * several jobs pops the prefix of pending it checked with one
 * ZREMRANGEBYRANK, as claim_batch and settle_claim pop (its keyspace
 * event and its count in commandstats are the script's too); it is not
 * propagated itself (the members' ZREM is, as above).
 *
 * The fence, by the load argument "fence key|client" (module/README.md,
 * "On a cluster"):
 *   - fence key (the default on a standalone server): every call reads
 *     {emq}:version before its first write, as above;
 *   - fence client (the default on a cluster-enabled server, where
 *     {emq}:version lives in one slot of one primary, never the node of a
 *     queue's keys but by chance): no call reads it; the fence is the
 *     client's check at connect (PROTOCOL.md), as it is for the scripts,
 *     which never read it either. "fence key" on a cluster-enabled server
 *     is refused at load: the key would be missing on every other primary.
 * Any other load argument is refused at load (the server does not start).
 */
#define EMQ_API_DEFINE
#include "emq_api.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EMQ_WIRE "echomq:6.0.0"
#define MAXSAFE 9007199254740991.0 /* 2^53 - 1, the scripts' bound */

/* Scratch memory: the server's allocator, or libc's in the sanitizer
 * build, where ASan sees every byte. */
#ifdef EMQ_LIBC_ALLOC
#define xrealloc realloc
#define xfree free
#else
#define xrealloc(p, n) RedisModule_Realloc((p), (n))
#define xfree(p) RedisModule_Free(p)
#endif

/* replicating: the server may propagate effects (see above); sticky. */
static int replicating;

static void on_event(RedisModuleCtx *ctx, RedisModuleEvent eid, uint64_t subevent, void *data) {
    (void)ctx;
    (void)eid;
    (void)subevent;
    (void)data;
    replicating = 1; /* a fork or a role change: from now on, always */
}

/* Constant strings, made once at load. */
static RedisModuleString *S_PENDING, *S_ACTIVE, *S_DELAYED, *S_DEAD, *S_COMPLETED;
static RedisModuleString *S_ZERO, *S_XX, *S_VERSION, *S_EMPTY;
static RedisModuleString *F_STATE, *F_ATTEMPTS, *F_PAYLOAD, *F_ERROR, *F_PAUSED;
/* S_NUM[i] is the decimal text of i: the attempts a claim writes, with no
 * string of the call's own (the server copies a value it stores). */
#define NUMS 256
static RedisModuleString *S_NUM[NUMS];

/* ---------------------------------------------------------------------- */
/* A growable vector of strings. */

typedef struct {
    RedisModuleString **v;
    size_t n, cap;
} svec;

static void sv_push(svec *s, RedisModuleString *x) {
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 16;
        s->v = xrealloc(s->v, s->cap * sizeof(*s->v));
    }
    s->v[s->n++] = x;
}

/* ---------------------------------------------------------------------- */
/* A set of byte strings (ids), open addressing; values are small tags. */

typedef struct {
    const char *p;
    size_t len;
    uint64_t h; /* the hash of p: a probe compares bytes only on equal hashes */
    int tag;    /* 0 empty slot, else the entry's tag */
} sent;

typedef struct {
    sent *t;
    size_t cap, n;
} sset;

/* hbytes: eight bytes a step, each folded in and mixed (the set is the
 * call's own, sized to its entries; no table outlives a call). */
static uint64_t hbytes(const char *p, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)n, w;
    for (; n >= 8; p += 8, n -= 8) {
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
    }
    w = 0;
    memcpy(&w, p, n);
    h ^= w; /* then murmur3's finalizer: every bit reaches the low ones */
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 33);
}

static void ss_init(sset *s, size_t want) {
    size_t cap = 16;
    while (cap < want * 2) cap <<= 1;
    s->t = xrealloc(NULL, cap * sizeof(sent));
    memset(s->t, 0, cap * sizeof(sent));
    s->cap = cap;
    s->n = 0;
}

/* ss_slot returns the slot of p (hash h): its entry, or the empty slot it
 * would take. */
static sent *ss_slot(sset *s, const char *p, size_t len, uint64_t h) {
    size_t i = h & (s->cap - 1);
    for (;;) {
        sent *e = &s->t[i];
        if (!e->tag || (e->h == h && e->len == len && memcmp(e->p, p, len) == 0)) return e;
        i = (i + 1) & (s->cap - 1);
    }
}

/* ss_room makes room for one more entry: the set is at most half full
 * after it (slots found before it are stale). */
static void ss_room(sset *s) {
    if (!s->t) ss_init(s, 8);
    if ((s->n + 1) * 2 <= s->cap) return;
    sset g;
    ss_init(&g, s->cap);
    for (size_t i = 0; i < s->cap; i++)
        if (s->t[i].tag) *ss_slot(&g, s->t[i].p, s->t[i].len, s->t[i].h) = s->t[i];
    g.n = s->n;
    xfree(s->t);
    *s = g;
}

/* ss_find returns p's slot (h its hbytes), room made for p to join: its
 * entry (tag set) or the empty slot to fill with ss_fill. */
static sent *ss_find(sset *s, const char *p, size_t len, uint64_t h) {
    ss_room(s);
    sent *e = ss_slot(s, p, len, h);
    if (!e->tag) e->h = h; /* kept for ss_fill: an empty slot's h is unread */
    return e;
}

/* ss_fill fills the empty slot e that ss_find returned for p; p must live
 * as long as the set. */
static void ss_fill(sset *s, sent *e, const char *p, size_t len, int tag) {
    e->p = p;
    e->len = len;
    e->tag = tag;
    s->n++;
}

/* ---------------------------------------------------------------------- */
/* One command call: its arguments, the strings it owns, its replication. */

typedef struct {
    RedisModuleCtx *ctx;
    RedisModuleString **keys; /* KEYS[1..nk] is keys[0..nk-1] */
    RedisModuleString **args; /* ARGV[1..na] is args[0..na-1] */
    int nk, na;
    const char *q; /* the queue name inside the keys */
    size_t ql;
    svec own;    /* strings freed at the end of the call */
    char *buf;   /* scratch for derived keys */
    size_t bufcap;
    int replicate; /* build the effects for propagation */
    int oom;       /* the server is over maxmemory (and must not obey this caller) */
    int acl;       /* 0: the caller's user not looked up yet, 1: user holds it, -1: no checks, -2: refuse */
    int lua;       /* called from a script */
    RedisModuleUser *user;   /* the caller's user, for the keys the call derives */
    RedisModuleString *uname;
    mstime_t now;  /* the server clock, read once */
    int have_now;
    /* The rows the call touches: one handle each (read and write), opened
     * at the first use and closed at the end, so that the type check
     * before the first write and the write share one lookup and no two
     * handles ever hold one key. */
    sset rows;                /* id -> index + 1 in rowk, rowh */
    RedisModuleString **rowk; /* the row keys */
    RedisModuleKey **rowh;    /* their handles */
    char *rowtag;             /* per row: 1 completed in this call, 2 and claimed again */
    size_t nrow, caprow;
    size_t *argrow;           /* per ARGV: its row's index + 1 (0: not looked up) */
    svec walk;      /* claim_check's walk of pending: its ids, in order */
    size_t *walkrow; /* the row (index in rowk, rowh) of each */
    RedisModuleKey *walkset; /* the set walked; a write to it ends the walk's use */
    int walkstale;
    /* The replication run: consecutive effects of one command on one key. */
    const char *rcmd;
    RedisModuleString *rkey;
    svec rargs;
} call;

static void own(call *c, RedisModuleString *s) {
    if (s) sv_push(&c->own, s);
}

static mstime_t now_ms(call *c) {
    if (!c->have_now) {
        c->now = RedisModule_Milliseconds();
        c->have_now = 1;
    }
    return c->now;
}

static void rep_flush(call *c) {
    if (!c->rcmd) return;
    if (c->rkey)
        RedisModule_Replicate(c->ctx, c->rcmd, "sv", c->rkey, c->rargs.v, c->rargs.n);
    else
        RedisModule_Replicate(c->ctx, c->rcmd, "v", c->rargs.v, c->rargs.n);
    c->rcmd = NULL;
    c->rkey = NULL;
    c->rargs.n = 0;
}

/* rep appends an effect "cmd key a..." to the replication stream, folded
 * into the run before it when that is the same command on the same key
 * (a NULL key: the arguments are keys, as DEL's). Every string must live
 * until the call ends (they are the call's own or its arguments). */
static void rep(call *c, const char *cmd, RedisModuleString *key, int n, ...) {
    if (!c->replicate) return;
    if (!c->rcmd || strcmp(c->rcmd, cmd) != 0 || c->rkey != key) {
        rep_flush(c);
        c->rcmd = cmd;
        c->rkey = key;
    }
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) sv_push(&c->rargs, va_arg(ap, RedisModuleString *));
    va_end(ap);
    /* A very long run goes out as it is, to keep one command bounded. */
    if (c->rargs.n >= 2000) rep_flush(c);
}

static void call_end(call *c) {
    rep_flush(c);
    if (c->user) RedisModule_FreeModuleUser(c->user);
    if (c->uname) RedisModule_FreeString(c->ctx, c->uname);
    for (size_t i = 0; i < c->nrow; i++) RedisModule_CloseKey(c->rowh[i]);
    xfree(c->rowh);
    xfree(c->rowtag);
    xfree(c->argrow);
    xfree(c->rows.t);
    xfree(c->walkrow);
    for (size_t i = 0; i < c->own.n; i++) RedisModule_FreeString(c->ctx, c->own.v[i]);
    xfree(c->own.v);
    xfree(c->rargs.v);
    xfree(c->buf);
    xfree(c->rowk);
    xfree(c->walk.v);
}

static const char *sp(const RedisModuleString *s, size_t *len) { return RedisModule_StringPtrLen(s, len); }

/* num_str: the decimal text of v's integer part (as "%lld"): a constant
 * for 0-255, else the call's own string (ll2string in the server: no
 * printf). */
static RedisModuleString *ll_str(call *c, long long x) {
    if (x >= 0 && x < NUMS) return S_NUM[x];
    RedisModuleString *s = RedisModule_CreateStringFromLongLong(c->ctx, x);
    own(c, s);
    return s;
}

static RedisModuleString *num_str(call *c, double v) { return ll_str(c, (long long)v); }

/* canon_int: p is the canonical decimal text of a whole number in
 * [0, 10^15) ("0" or 1-15 digits, no leading zero), which is exactly what
 * Lua's tonumber reads it as and what "%d" writes back; *out is it. Other
 * texts (signs, spaces, exponents, hex, leading zeros) go the long way. */
static int canon_int(const char *p, size_t l, long long *out) {
    if (l == 0 || l > 15 || (p[0] == '0' && l > 1)) return 0;
    long long v = 0;
    for (size_t i = 0; i < l; i++) {
        unsigned d = (unsigned)(unsigned char)p[i] - '0';
        if (d > 9) return 0;
        v = v * 10 + (long long)d;
    }
    *out = v;
    return 1;
}

/* ---------------------------------------------------------------------- */
/* Numbers and tokens, read as the scripts read them. */

/* lua_tonum is Lua 5.1's string-to-number conversion (luaO_str2d over the
 * C string): strtod, a hexadecimal integer, trailing white space allowed. */
static int lua_tonum(const char *s, double *out) {
    char *end;
    double v = strtod(s, &end);
    if (end == s) return 0;
    if (*end == 'x' || *end == 'X') v = (double)strtoul(s, &end, 16);
    while (*end != '\0' && isspace((unsigned char)*end)) end++;
    if (*end != '\0') return 0;
    *out = v;
    return 1;
}

/* lua_long is the C conversion Lua's string.format('%d') and its integer
 * replies make of a number, defined where x86 defines it (the integer
 * indefinite value for what does not fit). */
static long long lua_long(double v) {
    if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) return (long long)(-9223372036854775807LL - 1);
    return (long long)v;
}

/* str_num reads s as lua_tonum does; canonical decimal text (canon_int)
 * without strtod. */
static int str_num(const RedisModuleString *s, double *out) {
    size_t l;
    const char *p = RedisModule_StringPtrLen(s, &l);
    long long v;
    if (canon_int(p, l, &v)) {
        *out = (double)v;
        return 1;
    }
    return lua_tonum(p, out);
}

/* holds: the row's attempts is a whole number within 2^53 whose decimal
 * text is the token, byte for byte. */
static int holds(RedisModuleString *attempts, RedisModuleString *token) {
    if (!attempts || !token) return 0;
    size_t al, tl;
    const char *ap = sp(attempts, &al);
    long long ai;
    if (canon_int(ap, al, &ai)) { /* its own decimal text */
        const char *t = sp(token, &tl);
        return al == tl && memcmp(ap, t, tl) == 0;
    }
    double a;
    if (!lua_tonum(sp(attempts, NULL), &a)) return 0;
    if (a != floor(a) || fabs(a) > MAXSAFE) return 0;
    char b[32];
    int n = snprintf(b, sizeof b, "%lld", (long long)a);
    const char *t = sp(token, &tl);
    return (size_t)n == tl && memcmp(b, t, tl) == 0;
}

/* arg_int reads ARGV[i+1] as the scripts' integer checks do; on failure it
 * replies their EMQARG error and returns -1. */
static int arg_int(call *c, int i, const char *what, int min, double *out) {
    double v;
    if (i >= c->na || !str_num(c->args[i], &v) || v != floor(v) || v < min || v > MAXSAFE) {
        char b[128];
        snprintf(b, sizeof b, "EMQARG %s must be an integer >= %d", what, min);
        RedisModule_ReplyWithError(c->ctx, b);
        return -1;
    }
    *out = v;
    return 0;
}

static int eq_str(RedisModuleString *s, const char *lit) {
    size_t l;
    const char *p;
    if (!s) return 0;
    p = sp(s, &l);
    return l == strlen(lit) && memcmp(p, lit, l) == 0;
}

/* ---------------------------------------------------------------------- */
/* Memory and ACL, as a script meets them. */

/* oom_err answers what a script's first write that could grow memory
 * (HSET, ZADD) answers at maxmemory: the server's OOM error. */
static int oom_err(call *c) {
    RedisModule_ReplyWithError(c->ctx, "OOM command not allowed when used memory > 'maxmemory'.");
    return -1;
}

/* The keys a call derives (rows, meta) and the fence are checked against
 * the caller's user as a script's redis.call checks every key it names;
 * the server has checked the declared keys. ACL_R is a read (HGET, HMGET),
 * ACL_W a write (HSET, DEL, PEXPIRE), 0 any access (what EXISTS needs: a
 * pattern of either kind). */
#define ACL_R REDISMODULE_CMD_KEY_ACCESS
#define ACL_W REDISMODULE_CMD_KEY_UPDATE

static int valkey; /* the server is Valkey: its NOPERM text */

/* acl_user looks the caller's user up once per call: its name by the
 * client's id. A client the server does not list has none: another
 * module's call (its own user, or none: every key), unchecked as the
 * primary and the AOF are; a script's, whose caller the module cannot
 * name, refused (-2), so that no script reads through the module what
 * its caller may not. */
static int acl_user(call *c) {
    if (c->acl == 0) {
        c->acl = c->lua ? -2 : -1;
        c->uname = RedisModule_GetClientUserNameById(c->ctx, RedisModule_GetClientId(c->ctx));
        if (c->uname && (c->user = RedisModule_GetModuleUserFromUserName(c->uname)) != NULL) c->acl = 1;
    }
    return c->acl == 1;
}

/* acl_can: the caller may access key as flags say. */
static int acl_can(call *c, RedisModuleString *key, int flags) {
    if (!acl_user(c)) return c->acl != -2;
    if (flags == 0)
        return RedisModule_ACLCheckKeyPermissions(c->user, key, ACL_R) == REDISMODULE_OK ||
               RedisModule_ACLCheckKeyPermissions(c->user, key, ACL_W) == REDISMODULE_OK;
    return RedisModule_ACLCheckKeyPermissions(c->user, key, flags) == REDISMODULE_OK;
}

/* noperm answers a refused key as the server answers a command's: NOPERM,
 * logged in ACL LOG (context module). */
static int noperm(call *c, RedisModuleString *key) {
    if (c->user) RedisModule_ACLAddLogEntry(c->ctx, c->user, key, REDISMODULE_ACL_LOG_KEY);
    RedisModule_ReplyWithError(c->ctx, valkey ? "NOPERM No permissions to access a key"
                                              : "NOPERM this user has no permissions to access one of the keys used as "
                                                "arguments");
    return -1;
}

/* acl_level tells how far the caller may access the row key k: 2 as
 * flags | more say, 1 as flags alone, 0 not even that. The usual user,
 * allowed both, costs one check. */
static int acl_level(call *c, RedisModuleString *k, int flags, int more) {
    if (!acl_user(c)) return c->acl == -2 ? 0 : 2;
    if (acl_can(c, k, flags | more)) return 2;
    return acl_can(c, k, flags) ? 1 : 0;
}

/* ---------------------------------------------------------------------- */
/* Shape, layout, fence. */

/* keys_at answers the server's question where a call's keys are (the
 * "getkeys-api" flag: a cluster routes a module command by these, not by
 * its key specs): KEYS[1..nk], when numkeys is nk and the arguments are
 * all there; else none, so that the call runs where it was sent and gets
 * its own error from shape. */
static void keys_at(RedisModuleCtx *ctx, RedisModuleString **argv, int argc, int nk, int minargs) {
    long long k;
    if (!argv || argc < 2 + nk + minargs || RedisModule_StringToLongLong(argv[1], &k) != REDISMODULE_OK || k != nk)
        return;
    for (int i = 0; i < nk; i++) RedisModule_KeyAtPos(ctx, 2 + i);
}

/* shape checks numkeys and that the keys and at least minargs ARGV are
 * there; it fills c. Returns -1 after replying an error, or after
 * answering a keys position request (keys_at), which runs nothing. */
static int shape(call *c, RedisModuleCtx *ctx, RedisModuleString **argv, int argc, const char *name, int nk,
                 int minargs) {
    memset(c, 0, sizeof(*c));
    c->ctx = ctx;
    if (RedisModule_IsKeysPositionRequest(ctx)) {
        keys_at(ctx, argv, argc, nk, minargs);
        return -1;
    }
    int fl = RedisModule_GetContextFlags(ctx);
    c->replicate = replicating || (fl & REDISMODULE_CTX_FLAGS_AOF);
    /* As a script's first write that could grow memory is refused (the
     * server's OOM state, unless the caller is the primary or the AOF). */
    c->oom = (fl & REDISMODULE_CTX_FLAGS_OOM) && !(fl & (REDISMODULE_CTX_FLAGS_REPLICATED | REDISMODULE_CTX_FLAGS_LOADING));
    if (fl & (REDISMODULE_CTX_FLAGS_REPLICATED | REDISMODULE_CTX_FLAGS_LOADING)) c->acl = -1;
    c->lua = (fl & REDISMODULE_CTX_FLAGS_LUA) != 0;
    long long k;
    if (argc < 2) return RedisModule_WrongArity(ctx), -1;
    if (RedisModule_StringToLongLong(argv[1], &k) != REDISMODULE_OK || k != nk) {
        char b[96];
        snprintf(b, sizeof b, "ERR %s takes numkeys %d", name, nk);
        RedisModule_ReplyWithError(ctx, b);
        return -1;
    }
    if (argc < 2 + nk + minargs) return RedisModule_WrongArity(ctx), -1;
    c->nk = nk;
    c->keys = argv + 2;
    c->args = argv + 2 + nk;
    c->na = argc - 2 - nk;
    return 0;
}

/* layout_q reads the queue name from KEYS[i+1], which must be
 * emq:{q}:<suffix>. */
static int layout_q(call *c, int i, const char *suffix) {
    size_t kl, sl = strlen(suffix);
    const char *k = sp(c->keys[i], &kl);
    if (kl < 5 || memcmp(k, "emq:{", 5) != 0) return -1;
    const char *close = memchr(k + 5, '}', kl - 5);
    if (!close) return -1;
    size_t ql = (size_t)(close - (k + 5));
    if (ql < 1 || ql > 256 || memchr(k + 5, '{', ql) || memchr(k + 5, '\0', ql)) return -1;
    if (kl != 5 + ql + 2 + sl || close[1] != ':' || memcmp(close + 2, suffix, sl) != 0) return -1;
    c->q = k + 5;
    c->ql = ql;
    return 0;
}

/* is_key: KEYS[i+1] is emq:{q}:<a><b> (a al bytes, b bl). */
static int is_key(call *c, int i, const char *a, size_t al, const char *b, size_t bl) {
    size_t kl;
    const char *k = sp(c->keys[i], &kl);
    if (kl != 5 + c->ql + 2 + al + bl) return 0;
    if (memcmp(k, "emq:{", 5) != 0 || memcmp(k + 5, c->q, c->ql) != 0 || k[5 + c->ql] != '}' ||
        k[6 + c->ql] != ':')
        return 0;
    k += 7 + c->ql;
    return memcmp(k, a, al) == 0 && memcmp(k + al, b, bl) == 0;
}

static int layout_err(call *c, int i, const char *what) {
    char b[128];
    snprintf(b, sizeof b, "EMQKEYS KEYS[%d] must be emq:{<queue>}:%s of the call's queue", i + 1, what);
    RedisModule_ReplyWithError(c->ctx, b);
    return -1;
}

/* layout checks KEYS against their suffixes; suffix "job:" is the row of
 * ARGV[1]. The first key names the queue. */
static int layout(call *c, const char *const *sfx) {
    int qi = 0; /* the key layout_q read the queue from: it is checked */
    int row0 = sfx[0][0] == 'j'; /* "job:", the only suffix with a 'j' */
    size_t k0l;
    const char *k0 = sp(c->keys[0], &k0l);
    /* A row first is read as emq:{q}: (the only form that can pass) only
     * when it ends in "}:": a row key ends in its id. */
    int try0 = !row0 || (k0l >= 2 && k0[k0l - 1] == ':' && k0[k0l - 2] == '}');
    if (!try0 || layout_q(c, 0, row0 ? "" : sfx[0]) != 0) {
        /* A row first: find the queue in the first key that is no row. */
        int j;
        for (j = 1; j < c->nk && strcmp(sfx[j], "job:") == 0; j++) {
        }
        if (j == c->nk || layout_q(c, j, sfx[j]) != 0) return layout_err(c, j == c->nk ? 0 : j, sfx[j == c->nk ? 0 : j]);
        qi = j;
    }
    for (int i = 0; i < c->nk; i++) {
        if (sfx[i][0] == 'j') { /* "job:", the only suffix with a 'j' */
            size_t il;
            const char *id = sp(c->args[0], &il);
            if (!is_key(c, i, "job:", 4, id, il)) return layout_err(c, i, "job:<ARGV[1]>");
        } else if (i != qi && !is_key(c, i, sfx[i], strlen(sfx[i]), "", 0)) {
            return layout_err(c, i, sfx[i]);
        }
    }
    return 0;
}

/* fence_client: the load argument "fence client" (or a cluster-enabled
 * server): no call reads {emq}:version; the client checks it at connect. */
static int fence_client;

/* fence: {emq}:version holds echomq:6.<minor>.<patch>, or fence_client. */
static int fence(call *c) {
    if (fence_client) return 0;
    if (!acl_can(c, S_VERSION, ACL_R)) return noperm(c, S_VERSION);
    RedisModuleKey *k = RedisModule_OpenKey(c->ctx, S_VERSION, REDISMODULE_READ);
    int t = RedisModule_KeyType(k);
    if (t != REDISMODULE_KEYTYPE_STRING) {
        RedisModule_CloseKey(k);
        RedisModule_ReplyWithError(c->ctx, t == REDISMODULE_KEYTYPE_EMPTY
                                               ? "EMQFENCE {emq}:version is not set: the module speaks " EMQ_WIRE
                                               : "EMQFENCE {emq}:version is not a string: the module speaks " EMQ_WIRE);
        return -1;
    }
    size_t l;
    const char *v = RedisModule_StringDMA(k, &l, REDISMODULE_READ);
    int ok = l > 9 && memcmp(v, "echomq:6.", 9) == 0;
    if (ok) { /* MINOR.PATCH: digits, one dot, digits */
        size_t i = 9, d1 = 0, d2 = 0;
        while (i < l && isdigit((unsigned char)v[i])) i++, d1++;
        if (i < l && v[i] == '.') {
            i++;
            while (i < l && isdigit((unsigned char)v[i])) i++, d2++;
        }
        ok = d1 > 0 && d2 > 0 && i == l;
    }
    if (!ok) {
        char b[400];
        int n = (int)(l > 200 ? 200 : l);
        snprintf(b, sizeof b, "EMQFENCE {emq}:version holds %.*s, the module speaks " EMQ_WIRE, n, v);
        for (char *p = b; *p; p++)
            if (*p == '\r' || *p == '\n') *p = ' ';
        RedisModule_CloseKey(k);
        RedisModule_ReplyWithError(c->ctx, b);
        return -1;
    }
    RedisModule_CloseKey(k);
    return 0;
}

/* The row keys' strings (and meta's), interned across calls: a row's key
 * is made once when its job is enqueued and found again by the claim and
 * the completion (each of which made a string of its own before). The cache
 * is a direct-mapped table of KC_SIZE strings made without a context (no
 * call's memory), each entry the one reference the cache holds; a call
 * that takes one retains it, so an entry replaced or dropped while a call
 * still uses the string stays alive until that call's end. Only bytes
 * are cached, no state of the key: any string of the same bytes is as
 * good, in any database. A completion drops its row's entry; a new key
 * replaces the entry of its slot; so the cache holds at most KC_SIZE
 * strings of at most KC_MAXLEN bytes. An entry's hash is hbytes of the
 * id alone (the row set's hash of it, computed once), meta's of its key:
 * keys of two queues with one id share a slot, told apart by their
 * bytes. */
#define KC_SIZE 2048
#define KC_MAXLEN 160
typedef struct {
    RedisModuleString *s;
    uint64_t h;
} kcent;
static kcent kcache[KC_SIZE];

/* kc_hit returns the entry of key k (hash h) when it holds k, else NULL. */
static kcent *kc_hit(const char *k, size_t kl, uint64_t h) {
    kcent *e = &kcache[h & (KC_SIZE - 1)];
    if (!e->s || e->h != h) return NULL;
    size_t l;
    const char *p = RedisModule_StringPtrLen(e->s, &l);
    return l == kl && memcmp(p, k, kl) == 0 ? e : NULL;
}

/* kc_drop drops row key kn's entry (emq:{q}:job:<id> of the call's
 * queue), if the cache holds it. */
static void kc_drop(call *c, RedisModuleString *kn) {
    size_t kl;
    const char *k = RedisModule_StringPtrLen(kn, &kl);
    if (kl > KC_MAXLEN || kl < 11 + c->ql) return;
    kcent *e = kc_hit(k, kl, hbytes(k + 11 + c->ql, kl - 11 - c->ql));
    if (e) {
        RedisModule_FreeString(NULL, e->s);
        e->s = NULL;
    }
}

/* key_str returns the string of key k (kl bytes; h its cache hash), held
 * by the call until its end: from the cache, or made (and cached). */
static RedisModuleString *key_str(call *c, const char *k, size_t kl, uint64_t h) {
    RedisModuleString *s;
    if (kl > KC_MAXLEN) {
        s = RedisModule_CreateString(c->ctx, k, kl);
    } else {
        kcent *e = kc_hit(k, kl, h);
        if (!e) {
            e = &kcache[h & (KC_SIZE - 1)];
            if (e->s) RedisModule_FreeString(NULL, e->s);
            e->s = RedisModule_CreateString(NULL, k, kl);
            e->h = h;
        }
        s = e->s;
        RedisModule_RetainString(NULL, s);
    }
    own(c, s);
    return s;
}

/* job_key returns the string of emq:{q}:job:<id> (h: hbytes of the id),
 * held by the call until its end: from the cache, or made (and cached). */
static RedisModuleString *job_keyh(call *c, const char *id, size_t il, uint64_t h) {
    size_t need = 7 + c->ql + 4 + il;
    if (need > c->bufcap) {
        c->bufcap = need * 2;
        c->buf = xrealloc(c->buf, c->bufcap);
    }
    memcpy(c->buf, "emq:{", 5);
    memcpy(c->buf + 5, c->q, c->ql);
    memcpy(c->buf + 5 + c->ql, "}:job:", 6);
    memcpy(c->buf + 11 + c->ql, id, il);
    return key_str(c, c->buf, need, h);
}

static RedisModuleString *job_key(call *c, const char *id, size_t il) {
    return job_keyh(c, id, il, hbytes(id, il));
}

/* row_ix returns the index of the row of id ip (in rowk, rowh), its key
 * made and opened (read and write) at the first use in the call. ip must
 * live as long as the call (an argument or the call's own string). */
static size_t row_ix(call *c, const char *ip, size_t il) {
    uint64_t h = hbytes(ip, il);
    sent *e = ss_find(&c->rows, ip, il, h);
    if (e->tag) return (size_t)e->tag - 1;
    if (c->nrow == c->caprow) {
        c->caprow = c->caprow ? c->caprow * 2 : 16;
        c->rowk = xrealloc(c->rowk, c->caprow * sizeof(*c->rowk));
        c->rowh = xrealloc(c->rowh, c->caprow * sizeof(*c->rowh));
        c->rowtag = xrealloc(c->rowtag, c->caprow);
    }
    c->rowtag[c->nrow] = 0;
    RedisModuleString *k = job_keyh(c, ip, il, h);
    c->rowk[c->nrow] = k;
    c->rowh[c->nrow] = RedisModule_OpenKey(c->ctx, k, REDISMODULE_READ | REDISMODULE_WRITE);
    ss_fill(&c->rows, e, ip, il, (int)++c->nrow);
    return c->nrow - 1;
}

/* arg_row is row_ix of the id at ARGV[i+1], looked up once per call. */
static size_t arg_row(call *c, int i) {
    if (!c->argrow) {
        c->argrow = xrealloc(NULL, (size_t)(c->na + 1) * sizeof(*c->argrow));
        memset(c->argrow, 0, (size_t)(c->na + 1) * sizeof(*c->argrow));
    }
    if (!c->argrow[i]) {
        size_t il;
        const char *ip = sp(c->args[i], &il);
        c->argrow[i] = row_ix(c, ip, il) + 1;
    }
    return c->argrow[i] - 1;
}

/* rows_expect sizes the call's set of rows for about n of them. */
static void rows_expect(call *c, double n) {
    size_t want = n < 1024 ? (size_t)n : 1024;
    if (!c->rows.t) ss_init(&c->rows, want);
    if (c->caprow < want) { /* the row arrays too, at once */
        c->caprow = want;
        c->rowk = xrealloc(c->rowk, c->caprow * sizeof(*c->rowk));
        c->rowh = xrealloc(c->rowh, c->caprow * sizeof(*c->rowh));
        c->rowtag = xrealloc(c->rowtag, c->caprow);
    }
}

static RedisModuleString *meta_key(call *c) {
    size_t need = 7 + c->ql + 4;
    char b[300];
    memcpy(b, "emq:{", 5);
    memcpy(b + 5, c->q, c->ql);
    memcpy(b + 5 + c->ql, "}:meta", 6);
    return key_str(c, b, need, hbytes(b, need));
}

static int wrongtype(call *c) {
    RedisModule_ReplyWithError(c->ctx, REDISMODULE_ERRORMSG_WRONGTYPE);
    return -1;
}

static int type_ok(RedisModuleKey *k, int want) {
    int t = RedisModule_KeyType(k);
    return t == REDISMODULE_KEYTYPE_EMPTY || t == want;
}

static RedisModuleKey *openw(call *c, RedisModuleString *name) {
    return RedisModule_OpenKey(c->ctx, name, REDISMODULE_READ | REDISMODULE_WRITE);
}

/* paused: meta's paused field is "1". -1 (replied) when meta is no hash. */
static int paused(call *c) {
    RedisModuleString *mk = meta_key(c);
    if (!acl_can(c, mk, ACL_R)) return noperm(c, mk);
    RedisModuleKey *k = RedisModule_OpenKey(c->ctx, mk, REDISMODULE_READ);
    if (!type_ok(k, REDISMODULE_KEYTYPE_HASH)) {
        RedisModule_CloseKey(k);
        return wrongtype(c);
    }
    int p = 0;
    if (k) {
        RedisModuleString *v = NULL;
        RedisModule_HashGet(k, REDISMODULE_HASH_NONE, F_PAUSED, &v, NULL);
        p = eq_str(v, "1");
        if (v) RedisModule_FreeString(c->ctx, v);
    }
    RedisModule_CloseKey(k);
    return p;
}

/* ---------------------------------------------------------------------- */
/* Effects: each is applied, notified and replicated. */

static void e_hset2(call *c, RedisModuleKey *k, RedisModuleString *kn, RedisModuleString *f1, RedisModuleString *v1,
                    RedisModuleString *f2, RedisModuleString *v2) {
    if (f2)
        RedisModule_HashSet(k, REDISMODULE_HASH_NONE, f1, v1, f2, v2, NULL);
    else
        RedisModule_HashSet(k, REDISMODULE_HASH_NONE, f1, v1, NULL);
    RedisModule_NotifyKeyspaceEvent(c->ctx, REDISMODULE_NOTIFY_HASH, "hset", kn);
    if (f2)
        rep(c, "HSET", kn, 4, f1, v1, f2, v2);
    else
        rep(c, "HSET", kn, 2, f1, v1);
}

static void e_newrow(call *c, RedisModuleKey *k, RedisModuleString *kn, RedisModuleString *state,
                     RedisModuleString *payload) {
    RedisModule_HashSet(k, REDISMODULE_HASH_NONE, F_STATE, state, F_ATTEMPTS, S_ZERO, F_PAYLOAD, payload, NULL);
    RedisModule_NotifyKeyspaceEvent(c->ctx, REDISMODULE_NOTIFY_HASH, "hset", kn);
    rep(c, "HSET", kn, 6, F_STATE, state, F_ATTEMPTS, S_ZERO, F_PAYLOAD, payload);
}

/* zadd1 adds m at score: 1 when it joined or moved (ZADD's event then). */
static int zadd1(call *c, RedisModuleKey *k, RedisModuleString *kn, double score, RedisModuleString *sc,
                 RedisModuleString *m) {
    if (k == c->walkset) c->walkstale = 1;
    int fl = 0;
    RedisModule_ZsetAdd(k, score, m, &fl);
    if (c->replicate) rep(c, "ZADD", kn, 2, sc ? sc : num_str(c, score), m);
    return (fl & (REDISMODULE_ZADD_ADDED | REDISMODULE_ZADD_UPDATED)) != 0;
}

/* e_zadd is one ZADD of one member: its event when it changed the set. */
static void e_zadd(call *c, RedisModuleKey *k, RedisModuleString *kn, double score, RedisModuleString *sc,
                   RedisModuleString *m) {
    if (zadd1(c, k, kn, score, sc, m)) RedisModule_NotifyKeyspaceEvent(c->ctx, REDISMODULE_NOTIFY_ZSET, "zadd", kn);
}

/* zrem_done fires what a command that removed members fires: its event,
 * and del when the set is gone. */
static void zrem_done(call *c, RedisModuleKey *k, RedisModuleString *kn, const char *ev) {
    RedisModule_NotifyKeyspaceEvent(c->ctx, REDISMODULE_NOTIFY_ZSET, ev, kn);
    if (RedisModule_KeyType(k) == REDISMODULE_KEYTYPE_EMPTY)
        RedisModule_NotifyKeyspaceEvent(c->ctx, REDISMODULE_NOTIFY_GENERIC, "del", kn);
}

static int zrem1(call *c, RedisModuleKey *k, RedisModuleString *kn, RedisModuleString *m) {
    int deleted = 0;
    RedisModule_ZsetRem(k, m, &deleted);
    if (deleted) rep(c, "ZREM", kn, 1, m);
    return deleted;
}

/* e_zrem is one ZREM (ev "zrem") or ZPOPMIN (ev "zpopmin") of m. */
static void e_zrem_ev(call *c, RedisModuleKey *k, RedisModuleString *kn, RedisModuleString *m, const char *ev) {
    if (zrem1(c, k, kn, m)) zrem_done(c, k, kn, ev);
}

static void e_zrem(call *c, RedisModuleKey *k, RedisModuleString *kn, RedisModuleString *m) {
    e_zrem_ev(c, k, kn, m, "zrem");
}

/* A zbatch is the scripts' ZADD or ZREM of many members, 1,000 to a
 * command: one event per command that changed the set. */
typedef struct {
    int any, cnt;
} zbatch;

static void zb_end_rem(call *c, zbatch *b, RedisModuleKey *k, RedisModuleString *kn) {
    if (b->any) zrem_done(c, k, kn, "zrem");
    b->any = b->cnt = 0;
}

static void zb_rem(call *c, zbatch *b, RedisModuleKey *k, RedisModuleString *kn, RedisModuleString *m) {
    b->any |= zrem1(c, k, kn, m);
    if (++b->cnt == 1000) zb_end_rem(c, b, k, kn);
}

static void zb_end_add(call *c, zbatch *b, RedisModuleString *kn) {
    if (b->any) RedisModule_NotifyKeyspaceEvent(c->ctx, REDISMODULE_NOTIFY_ZSET, "zadd", kn);
    b->any = b->cnt = 0;
}

static void zb_add(call *c, zbatch *b, RedisModuleKey *k, RedisModuleString *kn, double score, RedisModuleString *sc,
                   RedisModuleString *m) {
    b->any |= zadd1(c, k, kn, score, sc, m);
    if (++b->cnt == 1000) zb_end_add(c, b, kn);
}

static void e_del(call *c, RedisModuleKey *k, RedisModuleString *kn) {
    RedisModule_DeleteKey(k);
    RedisModule_NotifyKeyspaceEvent(c->ctx, REDISMODULE_NOTIFY_GENERIC, "del", kn);
    rep(c, "DEL", NULL, 1, kn);
}

/* e_complete: state completed, expiring keep ms from now; or deleted. */
static void e_complete(call *c, RedisModuleKey *row, RedisModuleString *kn, double keep) {
    kc_drop(c, kn); /* the row is done with: no hot path reads it again */
    if (keep == 0) {
        e_del(c, row, kn);
        return;
    }
    e_hset2(c, row, kn, F_STATE, S_COMPLETED, NULL, NULL);
    double at = (double)now_ms(c) + keep;
    RedisModule_SetAbsExpire(row, (mstime_t)at);
    RedisModule_NotifyKeyspaceEvent(c->ctx, REDISMODULE_NOTIFY_GENERIC, "expire", kn);
    if (c->replicate) rep(c, "PEXPIREAT", kn, 1, num_str(c, at));
}

/* row_fields reads state and attempts of an open row (either NULL). */
static void row_fields(call *c, RedisModuleKey *k, RedisModuleString **state, RedisModuleString **attempts) {
    *state = *attempts = NULL;
    if (RedisModule_KeyType(k) != REDISMODULE_KEYTYPE_HASH) return;
    RedisModule_HashGet(k, REDISMODULE_HASH_NONE, F_STATE, state, F_ATTEMPTS, attempts, NULL);
    own(c, *state);
    own(c, *attempts);
}

/* ---------------------------------------------------------------------- */
/* EMQ.ENQUEUE 2 row pending id payload */

static int is_job(RedisModuleString *id) {
    size_t l;
    const char *p = sp(id, &l);
    return l >= 3 && memcmp(p, "JOB", 3) == 0;
}

static int kind_err(call *c) {
    RedisModule_ReplyWithError(c->ctx, "EMQKIND job id must be JOB-namespaced");
    return -1;
}

/* enqueue_one writes a new row and its set entry, or answers 0 when the
 * row exists: enqueue (delay < 0: pending at 0) and enqueue_at. */
static int enqueue_one(call *c, RedisModuleString *row, RedisModuleString *set, RedisModuleString *id,
                       RedisModuleString *payload, double delay) {
    RedisModuleKey *rk = openw(c, row);
    if (RedisModule_KeyType(rk) != REDISMODULE_KEYTYPE_EMPTY) {
        RedisModule_CloseKey(rk);
        return RedisModule_ReplyWithLongLong(c->ctx, 0);
    }
    if (c->oom) { /* the script's HSET, its first write */
        RedisModule_CloseKey(rk);
        return oom_err(c), REDISMODULE_OK;
    }
    RedisModuleKey *sk = openw(c, set);
    if (!type_ok(sk, REDISMODULE_KEYTYPE_ZSET)) {
        RedisModule_CloseKey(rk);
        RedisModule_CloseKey(sk);
        return wrongtype(c), REDISMODULE_OK;
    }
    if (delay < 0) {
        e_newrow(c, rk, row, S_PENDING, payload);
        e_zadd(c, sk, set, 0, S_ZERO, id);
    } else {
        double due = (double)now_ms(c) + delay;
        e_newrow(c, rk, row, S_DELAYED, payload);
        e_zadd(c, sk, set, due, NULL, id);
    }
    RedisModule_CloseKey(rk);
    RedisModule_CloseKey(sk);
    return RedisModule_ReplyWithLongLong(c->ctx, 1);
}

static int cmd_enqueue(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    call c;
    static const char *const sfx[] = {"job:", "pending"};
    if (shape(&c, ctx, argv, argc, "EMQ.ENQUEUE", 2, 2) != 0) return REDISMODULE_OK;
    if (layout(&c, sfx) == 0 && fence(&c) == 0) {
        if (!is_job(c.args[0]))
            kind_err(&c);
        else
            enqueue_one(&c, c.keys[0], c.keys[1], c.args[0], c.args[1], -1);
    }
    call_end(&c);
    return REDISMODULE_OK;
}

/* EMQ.ENQUEUE_AT 2 row delayed id payload delay_ms */
static int cmd_enqueue_at(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    call c;
    static const char *const sfx[] = {"job:", "delayed"};
    double delay;
    if (shape(&c, ctx, argv, argc, "EMQ.ENQUEUE_AT", 2, 2) != 0) return REDISMODULE_OK;
    if (layout(&c, sfx) == 0 && fence(&c) == 0) {
        if (!is_job(c.args[0]))
            kind_err(&c);
        else if (arg_int(&c, 2, "delay_ms", 0, &delay) == 0)
            enqueue_one(&c, c.keys[0], c.keys[1], c.args[0], c.args[1], delay);
    }
    call_end(&c);
    return REDISMODULE_OK;
}

/* ---------------------------------------------------------------------- */
/* EMQ.CLAIM 3 pending active base lease_ms */

/* zfirst returns the first member of an open zset, or NULL. */
static RedisModuleString *zfirst(call *c, RedisModuleKey *z) {
    if (RedisModule_KeyType(z) != REDISMODULE_KEYTYPE_ZSET) return NULL;
    RedisModuleString *e = NULL;
    if (RedisModule_ZsetFirstInScoreRange(z, -INFINITY, INFINITY, 0, 0) == REDISMODULE_OK) {
        if (!RedisModule_ZsetRangeEndReached(z)) e = RedisModule_ZsetRangeCurrentElement(z, NULL);
        RedisModule_ZsetRangeStop(z);
    }
    own(c, e);
    return e;
}

static int cmd_claim(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    call c;
    static const char *const sfx[] = {"pending", "active", ""};
    double lease;
    if (shape(&c, ctx, argv, argc, "EMQ.CLAIM", 3, 0) != 0) return REDISMODULE_OK;
    if (layout(&c, sfx) != 0 || fence(&c) != 0 || arg_int(&c, 0, "lease_ms", 1, &lease) != 0) goto done;
    int p = paused(&c);
    if (p < 0) goto done;
    if (p) {
        RedisModule_ReplyWithArray(ctx, 0);
        goto done;
    }
    RedisModuleKey *pk = openw(&c, c.keys[0]);
    if (!type_ok(pk, REDISMODULE_KEYTYPE_ZSET)) {
        RedisModule_CloseKey(pk);
        wrongtype(&c);
        goto done;
    }
    RedisModuleString *id = zfirst(&c, pk);
    if (!id) {
        RedisModule_CloseKey(pk);
        RedisModule_ReplyWithArray(ctx, 0);
        goto done;
    }
    size_t il;
    const char *ip = sp(id, &il);
    RedisModuleString *row = job_key(&c, ip, il);
    RedisModuleKey *rk = openw(&c, row);
    RedisModuleKey *ak = openw(&c, c.keys[1]);
    int rt = RedisModule_KeyType(rk);
    if ((rt != REDISMODULE_KEYTYPE_EMPTY && rt != REDISMODULE_KEYTYPE_HASH) || !type_ok(ak, REDISMODULE_KEYTYPE_ZSET)) {
        wrongtype(&c);
        goto close3;
    }
    /* The script's EXISTS of the row (any access), then its HINCRBY, HSET
     * and HGET (read and write). */
    int lv = acl_level(&c, row, 0, ACL_R | ACL_W);
    if (lv == 0 || (lv == 1 && rt == REDISMODULE_KEYTYPE_HASH)) {
        noperm(&c, row);
        goto close3;
    }
    long long att = 0;
    RedisModuleString *payload = NULL, *a = NULL;
    if (rt == REDISMODULE_KEYTYPE_HASH) {
        RedisModule_HashGet(rk, REDISMODULE_HASH_NONE, F_ATTEMPTS, &a, F_PAYLOAD, &payload, NULL);
        own(&c, a);
        own(&c, payload);
        /* HINCRBY's rules: an integer field, no overflow. */
        if (a && RedisModule_StringToLongLong(a, &att) != REDISMODULE_OK) {
            RedisModule_ReplyWithError(ctx, "ERR hash value is not an integer");
            goto close3;
        }
        if (att == 9223372036854775807LL) {
            RedisModule_ReplyWithError(ctx, "ERR increment or decrement would overflow");
            goto close3;
        }
    }
    e_zrem_ev(&c, pk, c.keys[0], id, "zpopmin"); /* the pop; a ghost (no row) is dropped */
    if (rt == REDISMODULE_KEYTYPE_EMPTY) {
        RedisModule_ReplyWithArray(ctx, 0);
        goto close3;
    }
    /* HINCRBY stores the exact integer; the script's reply is it as a Lua
     * number (a double), made an integer again. */
    att++;
    RedisModuleString *as = ll_str(&c, att);
    RedisModule_HashSet(rk, REDISMODULE_HASH_NONE, F_ATTEMPTS, as, F_STATE, S_ACTIVE, NULL);
    RedisModule_NotifyKeyspaceEvent(ctx, REDISMODULE_NOTIFY_HASH, "hincrby", row);
    RedisModule_NotifyKeyspaceEvent(ctx, REDISMODULE_NOTIFY_HASH, "hset", row);
    rep(&c, "HSET", row, 4, F_ATTEMPTS, as, F_STATE, S_ACTIVE);
    e_zadd(&c, ak, c.keys[1], (double)now_ms(&c) + lease, NULL, id);
    RedisModule_ReplyWithArray(ctx, 3);
    RedisModule_ReplyWithString(ctx, id);
    if (payload)
        RedisModule_ReplyWithString(ctx, payload);
    else
        RedisModule_ReplyWithNull(ctx);
    RedisModule_ReplyWithLongLong(ctx, lua_long((double)att));
close3:
    RedisModule_CloseKey(rk);
    RedisModule_CloseKey(ak);
    RedisModule_CloseKey(pk);
done:
    call_end(&c);
    return REDISMODULE_OK;
}

/* ---------------------------------------------------------------------- */
/* EMQ.COMPLETE 2 active row id token retention_ms */

static int cmd_complete(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    call c;
    static const char *const sfx[] = {"active", "job:"};
    double keep;
    if (shape(&c, ctx, argv, argc, "EMQ.COMPLETE", 2, 2) != 0) return REDISMODULE_OK;
    if (layout(&c, sfx) != 0 || fence(&c) != 0 || arg_int(&c, 2, "retention_ms", 0, &keep) != 0) goto done;
    RedisModuleKey *rk = openw(&c, c.keys[1]);
    if (!type_ok(rk, REDISMODULE_KEYTYPE_HASH)) {
        RedisModule_CloseKey(rk);
        wrongtype(&c);
        goto done;
    }
    RedisModuleString *st, *at;
    row_fields(&c, rk, &st, &at);
    if (!eq_str(st, "active") || !holds(at, c.args[1])) {
        RedisModule_CloseKey(rk);
        RedisModule_ReplyWithLongLong(ctx, 0);
        goto done;
    }
    RedisModuleKey *ak = openw(&c, c.keys[0]);
    if (!type_ok(ak, REDISMODULE_KEYTYPE_ZSET)) {
        wrongtype(&c);
    } else {
        e_zrem(&c, ak, c.keys[0], c.args[0]);
        e_complete(&c, rk, c.keys[1], keep);
        RedisModule_ReplyWithLongLong(ctx, 1);
    }
    RedisModule_CloseKey(ak);
    RedisModule_CloseKey(rk);
done:
    call_end(&c);
    return REDISMODULE_OK;
}

/* ---------------------------------------------------------------------- */
/* EMQ.RETRY 5 active row pending delayed dead id token delay_ms max_attempts [error] */

/* settle_retry: the retry of one job, its row open: ZREM active, then the
 * error and the state, then the set. Returns the reply (2 or 1). */
static int settle_retry(call *c, RedisModuleKey *rk, RedisModuleString *row, RedisModuleString *id, double attempts,
                        double delay, double max, RedisModuleString *err, RedisModuleKey *ak, RedisModuleString *an,
                        RedisModuleKey *pk, RedisModuleString *pn, RedisModuleKey *dk, RedisModuleString *dn,
                        RedisModuleKey *xk, RedisModuleString *xn, int hsets) {
    e_zrem(c, ak, an, id);
    /* retry's HSET of the error, then of the state (settle_claim's one) */
    if (hsets == 2) RedisModule_NotifyKeyspaceEvent(c->ctx, REDISMODULE_NOTIFY_HASH, "hset", row);
    if (attempts >= max) {
        e_hset2(c, rk, row, F_ERROR, err, F_STATE, S_DEAD);
        e_zadd(c, xk, xn, (double)now_ms(c), NULL, id);
        return 2;
    }
    if (delay == 0) {
        e_hset2(c, rk, row, F_ERROR, err, F_STATE, S_PENDING);
        e_zadd(c, pk, pn, 0, S_ZERO, id);
    } else {
        e_hset2(c, rk, row, F_ERROR, err, F_STATE, S_DELAYED);
        e_zadd(c, dk, dn, (double)now_ms(c) + delay, NULL, id);
    }
    return 1;
}

static int cmd_retry(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    call c;
    static const char *const sfx[] = {"active", "job:", "pending", "delayed", "dead"};
    double delay, max;
    if (shape(&c, ctx, argv, argc, "EMQ.RETRY", 5, 2) != 0) return REDISMODULE_OK;
    if (layout(&c, sfx) != 0 || fence(&c) != 0 || arg_int(&c, 2, "delay_ms", 0, &delay) != 0 ||
        arg_int(&c, 3, "max_attempts", 0, &max) != 0)
        goto done;
    RedisModuleString *err = c.na >= 5 ? c.args[4] : S_EMPTY;
    RedisModuleKey *rk = openw(&c, c.keys[1]);
    if (!type_ok(rk, REDISMODULE_KEYTYPE_HASH)) {
        RedisModule_CloseKey(rk);
        wrongtype(&c);
        goto done;
    }
    RedisModuleString *st, *at;
    row_fields(&c, rk, &st, &at);
    if (!eq_str(st, "active") || !holds(at, c.args[1])) {
        RedisModule_CloseKey(rk);
        RedisModule_ReplyWithLongLong(ctx, 0);
        goto done;
    }
    double attempts = 0;
    str_num(at, &attempts);
    /* The sets this retry writes: active and its destination. */
    int dest = attempts >= max ? 4 : delay == 0 ? 2 : 3;
    RedisModuleKey *ak = openw(&c, c.keys[0]);
    RedisModuleKey *tk = openw(&c, c.keys[dest]);
    if (!type_ok(ak, REDISMODULE_KEYTYPE_ZSET) || !type_ok(tk, REDISMODULE_KEYTYPE_ZSET)) {
        wrongtype(&c);
    } else {
        int r = settle_retry(&c, rk, c.keys[1], c.args[0], attempts, delay, max, err, ak, c.keys[0], tk, c.keys[2],
                             tk, c.keys[3], tk, c.keys[4], 2);
        RedisModule_ReplyWithLongLong(ctx, r);
    }
    RedisModule_CloseKey(tk);
    RedisModule_CloseKey(ak);
    RedisModule_CloseKey(rk);
done:
    call_end(&c);
    return REDISMODULE_OK;
}

/* ---------------------------------------------------------------------- */
/* EMQ.EXTEND 2 active row id token lease_ms */

static int cmd_extend(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    call c;
    static const char *const sfx[] = {"active", "job:"};
    double lease, score;
    if (shape(&c, ctx, argv, argc, "EMQ.EXTEND", 2, 2) != 0) return REDISMODULE_OK;
    if (layout(&c, sfx) != 0 || fence(&c) != 0 || arg_int(&c, 2, "lease_ms", 1, &lease) != 0) goto done;
    RedisModuleKey *rk = RedisModule_OpenKey(ctx, c.keys[1], REDISMODULE_READ);
    if (!type_ok(rk, REDISMODULE_KEYTYPE_HASH)) {
        RedisModule_CloseKey(rk);
        wrongtype(&c);
        goto done;
    }
    RedisModuleString *st, *at;
    row_fields(&c, rk, &st, &at);
    RedisModule_CloseKey(rk);
    if (!eq_str(st, "active") || !holds(at, c.args[1])) {
        RedisModule_ReplyWithLongLong(ctx, 0);
        goto done;
    }
    RedisModuleKey *ak = openw(&c, c.keys[0]);
    if (!type_ok(ak, REDISMODULE_KEYTYPE_ZSET)) {
        wrongtype(&c);
    } else if (RedisModule_KeyType(ak) == REDISMODULE_KEYTYPE_EMPTY ||
               RedisModule_ZsetScore(ak, c.args[0], &score) != REDISMODULE_OK) {
        RedisModule_ReplyWithLongLong(ctx, 0);
    } else if (c.oom) { /* ZADD XX, the script's first write */
        oom_err(&c);
    } else {
        double d = (double)now_ms(&c) + lease;
        int fl = REDISMODULE_ZADD_XX;
        RedisModule_ZsetAdd(ak, d, c.args[0], &fl);
        if (fl & REDISMODULE_ZADD_UPDATED) /* ZADD's event: only when the score moved */
            RedisModule_NotifyKeyspaceEvent(ctx, REDISMODULE_NOTIFY_ZSET, "zadd", c.keys[0]);
        if (c.replicate) rep(&c, "ZADD", c.keys[0], 3, S_XX, num_str(&c, d), c.args[0]);
        RedisModule_ReplyWithLongLong(ctx, 1);
    }
    RedisModule_CloseKey(ak);
done:
    call_end(&c);
    return REDISMODULE_OK;
}

/* ---------------------------------------------------------------------- */
/* EMQ.PROMOTE 3 delayed pending base limit */

static int cmd_promote(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    call c;
    static const char *const sfx[] = {"delayed", "pending", ""};
    double limit;
    svec ids = {0};
    if (shape(&c, ctx, argv, argc, "EMQ.PROMOTE", 3, 0) != 0) return REDISMODULE_OK;
    if (layout(&c, sfx) != 0 || fence(&c) != 0 || arg_int(&c, 0, "limit", 0, &limit) != 0) goto done;
    double now = (double)now_ms(&c);
    RedisModuleKey *dk = openw(&c, c.keys[0]);
    RedisModuleKey *pk = openw(&c, c.keys[1]);
    if (!type_ok(dk, REDISMODULE_KEYTYPE_ZSET)) {
        wrongtype(&c);
        goto close2;
    }
    if (RedisModule_KeyType(dk) == REDISMODULE_KEYTYPE_ZSET && limit > 0 &&
        RedisModule_ZsetFirstInScoreRange(dk, -INFINITY, now, 0, 0) == REDISMODULE_OK) {
        while (!RedisModule_ZsetRangeEndReached(dk) && (double)ids.n < limit) {
            RedisModuleString *e = RedisModule_ZsetRangeCurrentElement(dk, NULL);
            own(&c, e);
            sv_push(&ids, e);
            if (!RedisModule_ZsetRangeNext(dk)) break;
        }
        RedisModule_ZsetRangeStop(dk);
    }
    /* Every key written is typed before the first write. */
    if (ids.n > 0 && !type_ok(pk, REDISMODULE_KEYTYPE_ZSET)) {
        wrongtype(&c);
        goto close2;
    }
    for (size_t i = 0; i < ids.n; i++) {
        size_t il;
        const char *ip = sp(ids.v[i], &il);
        RedisModuleString *row = job_key(&c, ip, il);
        RedisModuleKey *rk = RedisModule_OpenKey(ctx, row, REDISMODULE_READ);
        int t = RedisModule_KeyType(rk);
        RedisModule_CloseKey(rk);
        if (t != REDISMODULE_KEYTYPE_EMPTY && t != REDISMODULE_KEYTYPE_HASH) {
            wrongtype(&c);
            goto close2;
        }
        /* The script's EXISTS of the row (any access), its HSET (write). */
        int lv = acl_level(&c, row, 0, ACL_W);
        if (lv == 0 || (lv == 1 && t == REDISMODULE_KEYTYPE_HASH)) {
            noperm(&c, row);
            goto close2;
        }
    }
    for (size_t i = 0; i < ids.n; i++) {
        size_t il;
        const char *ip = sp(ids.v[i], &il);
        RedisModuleString *row = job_key(&c, ip, il);
        e_zrem(&c, dk, c.keys[0], ids.v[i]);
        RedisModuleKey *rk = openw(&c, row);
        if (RedisModule_KeyType(rk) == REDISMODULE_KEYTYPE_HASH) e_hset2(&c, rk, row, F_STATE, S_PENDING, NULL, NULL);
        RedisModule_CloseKey(rk);
        e_zadd(&c, pk, c.keys[1], 0, S_ZERO, ids.v[i]);
    }
    RedisModule_ReplyWithLongLong(ctx, (long long)ids.n);
close2:
    RedisModule_CloseKey(dk);
    RedisModule_CloseKey(pk);
done:
    xfree(ids.v);
    call_end(&c);
    return REDISMODULE_OK;
}

/* ---------------------------------------------------------------------- */
/* EMQ.ENQUEUE_BATCH 2 pending base id1 payload1 ... */

static int cmd_enqueue_batch(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    call c;
    static const char *const sfx[] = {"pending", ""};
    char *add;
    if (shape(&c, ctx, argv, argc, "EMQ.ENQUEUE_BATCH", 2, 0) != 0) return REDISMODULE_OK;
    if (layout(&c, sfx) != 0 || fence(&c) != 0) goto done;
    if (c.na % 2 != 0) {
        RedisModule_ReplyWithError(ctx, "EMQARG ids and payloads must come in pairs");
        goto done;
    }
    for (int i = 0; i < c.na; i += 2)
        if (!is_job(c.args[i])) {
            kind_err(&c);
            goto done;
        }
    int m = c.na / 2;
    /* The rows, each made once: the script's EXISTS of every row (any
     * access) comes before its first HSET of a new one (a write, and the
     * first write: refused at maxmemory). */
    RedisModuleString **rows = xrealloc(NULL, (size_t)m * sizeof(*rows) + (size_t)m + 1);
    add = (char *)(rows + m);
    int absent = 0;
    for (int j = 0; j < m; j++) {
        size_t il;
        const char *ip = sp(c.args[2 * j], &il);
        rows[j] = job_key(&c, ip, il);
        int lv = acl_level(&c, rows[j], 0, ACL_W);
        add[j] = 0;
        if (lv == 2 && !c.oom) continue;
        if (lv == 0) {
            noperm(&c, rows[j]);
            goto donerows;
        }
        RedisModuleKey *rk = RedisModule_OpenKey(ctx, rows[j], REDISMODULE_READ);
        add[j] = RedisModule_KeyType(rk) == REDISMODULE_KEYTYPE_EMPTY;
        RedisModule_CloseKey(rk);
        absent |= add[j];
        if (lv == 1 && add[j]) {
            noperm(&c, rows[j]);
            goto donerows;
        }
    }
    if (c.oom && absent) {
        oom_err(&c);
        goto donerows;
    }
    RedisModuleKey *pk = openw(&c, c.keys[0]);
    if (!type_ok(pk, REDISMODULE_KEYTYPE_ZSET)) {
        /* Wrong only if a job would be added: find out without writing. */
        int any = 0;
        for (int j = 0; j < m && !any; j++) {
            RedisModuleKey *rk = RedisModule_OpenKey(ctx, rows[j], REDISMODULE_READ);
            if (RedisModule_KeyType(rk) == REDISMODULE_KEYTYPE_EMPTY) any = 1;
            RedisModule_CloseKey(rk);
        }
        RedisModule_CloseKey(pk);
        if (any) {
            wrongtype(&c);
        } else {
            RedisModule_ReplyWithArray(ctx, m);
            for (int j = 0; j < m; j++) RedisModule_ReplyWithLongLong(ctx, 0);
        }
        goto donerows;
    }
    /* An id given twice finds its row written by the first: no set of
     * the ids seen is needed to answer 0 for it. */
    for (int j = 0; j < m; j++) {
        RedisModuleKey *rk = openw(&c, rows[j]);
        add[j] = 0;
        if (RedisModule_KeyType(rk) == REDISMODULE_KEYTYPE_EMPTY) {
            e_newrow(&c, rk, rows[j], S_PENDING, c.args[2 * j + 1]);
            add[j] = 1;
        }
        RedisModule_CloseKey(rk);
    }
    zbatch zb = {0, 0}; /* the ZADD, newest first */
    for (int j = m - 1; j >= 0; j--)
        if (add[j]) zb_add(&c, &zb, pk, c.keys[0], 0, S_ZERO, c.args[2 * j]);
    zb_end_add(&c, &zb, c.keys[0]);
    RedisModule_CloseKey(pk);
    RedisModule_ReplyWithArray(ctx, m);
    for (int j = 0; j < m; j++) RedisModule_ReplyWithLongLong(ctx, add[j]);
donerows:
    xfree(rows);
    call_end(&c);
    return REDISMODULE_OK;
done:
    call_end(&c);
    return REDISMODULE_OK;
}

/* ---------------------------------------------------------------------- */
/* The claim of claim_batch and settle_claim. */

/* claim_check types the rows the claim of up to n jobs may pop: the prefix
 * of pending up to its n-th row; and checks them against the caller's
 * ACL as the script's claim reads them (HMGET: read) and writes those
 * that are rows (HSET: write). -1 (replied) on a row of another type or
 * a refused one. */
static int claim_check(call *c, RedisModuleKey *pk, double n) {
    c->walkset = pk;
    if (RedisModule_KeyType(pk) != REDISMODULE_KEYTYPE_ZSET) return 0;
    if (RedisModule_ZsetFirstInScoreRange(pk, -INFINITY, INFINITY, 0, 0) != REDISMODULE_OK) return 0;
    double real = 0;
    int bad = 0;
    size_t capw = 0, denied = 0;
    while (!RedisModule_ZsetRangeEndReached(pk) && real < n) {
        RedisModuleString *e = RedisModule_ZsetRangeCurrentElement(pk, NULL);
        own(c, e);
        size_t il;
        const char *ip = sp(e, &il);
        size_t r = row_ix(c, ip, il);
        int t = RedisModule_KeyType(c->rowh[r]);
        sv_push(&c->walk, e);
        if (c->walk.n > capw) {
            capw = c->walk.cap;
            c->walkrow = xrealloc(c->walkrow, capw * sizeof(*c->walkrow));
        }
        c->walkrow[c->walk.n - 1] = r;
        if (t == REDISMODULE_KEYTYPE_HASH)
            real++;
        else if (t != REDISMODULE_KEYTYPE_EMPTY) {
            bad = 1;
            break;
        }
        int lv = acl_level(c, c->rowk[r], ACL_R, ACL_W);
        if (lv == 0 || (lv == 1 && t == REDISMODULE_KEYTYPE_HASH)) {
            denied = r + 1;
            break;
        }
        if (!RedisModule_ZsetRangeNext(pk)) break;
    }
    RedisModule_ZsetRangeStop(pk);
    if (denied) return noperm(c, c->rowk[denied - 1]);
    return bad ? wrongtype(c) : 0;
}

/* pop_n pops pending's first k members (ms) as the scripts pop, with one
 * ZREMRANGEBYRANK (a ZREM per member looks each up again; the server's
 * own events, zremrangebyrank and del, are the script's). The call may
 * delete pending: the handle *pkp is closed around it and opened again.
 * The effect replicated is the members' ZREM. When the call fails
 * (nothing was removed) the members go one by one. */
static void pop_n(call *c, RedisModuleKey **pkp, RedisModuleString *pn, RedisModuleString **ms, size_t k) {
    int stale = c->walkstale;
    RedisModule_CloseKey(*pkp);
    RedisModuleCallReply *r = RedisModule_Call(c->ctx, "ZREMRANGEBYRANK", "sll", pn, 0LL, (long long)k - 1);
    *pkp = openw(c, pn);
    c->walkset = *pkp;
    c->walkstale = stale;
    int ok = r && RedisModule_CallReplyType(r) == REDISMODULE_REPLY_INTEGER;
    if (r) RedisModule_FreeCallReply(r);
    if (!ok) {
        for (size_t i = 0; i < k; i++) e_zrem(c, *pkp, pn, ms[i]);
        return;
    }
    if (c->replicate)
        for (size_t i = 0; i < k; i++) rep(c, "ZREM", pn, 1, ms[i]);
}

/* claim_run claims as the script claims: rounds of pending's first n - nl
 * members (nl the jobs leased so far), each popped at once, every row
 * among them leased (attempts + 1 from the row's attempts read as a
 * number, state active), until n are leased or pending is empty; then
 * the leased join active at now + lease, newest first, and the jobs
 * array is replied. The members are claim_check's walk while pending is
 * as walked, then read from pending (past what is left of the walk). A
 * row completed in this call (rowtag 1) and claimed again is tagged 2.
 * The caller has typed pending, active and the walk's rows. */
static void claim_run(call *c, RedisModuleKey **pkp, RedisModuleString *pn, RedisModuleKey *ak,
                      RedisModuleString *an, double lease, double n) {
    svec leased = {0}, round = {0};
    size_t *rrow = NULL, caprr = 0;
    long nl = 0;
    size_t w = 0;
    int stop = 0;
    RedisModuleString *dl = NULL;
    double deadline = 0;
    RedisModule_ReplyWithArray(c->ctx, REDISMODULE_POSTPONED_LEN);
    while ((double)nl < n && !stop) {
        double want = n - (double)nl;
        size_t fw = 0; /* from the walk */
        if (!c->walkstale)
            while (w + fw < c->walk.n && (double)fw < want) fw++;
        /* The usual round is all the walk's: no copy of it. */
        RedisModuleString **rv = c->walk.v + w;
        size_t *rr = c->walkrow + w, rn = fw;
        if ((double)fw < want && RedisModule_KeyType(*pkp) == REDISMODULE_KEYTYPE_ZSET &&
            RedisModule_ValueLength(*pkp) > fw) {
            round.n = 0;
            for (size_t i = 0; i < fw; i++) sv_push(&round, c->walk.v[w + i]);
            if (round.cap > caprr) {
                caprr = round.cap;
                rrow = xrealloc(rrow, caprr * sizeof(*rrow));
            }
            for (size_t i = 0; i < fw; i++) rrow[i] = c->walkrow[w + i];
            /* Past the walk: pending's members after the fw still there. */
            RedisModuleKey *pk = *pkp;
            if (RedisModule_ZsetFirstInScoreRange(pk, -INFINITY, INFINITY, 0, 0) == REDISMODULE_OK) {
                size_t skip = fw;
                while (!RedisModule_ZsetRangeEndReached(pk) && (double)round.n < want) {
                    if (skip > 0) {
                        skip--;
                    } else {
                        RedisModuleString *e = RedisModule_ZsetRangeCurrentElement(pk, NULL);
                        own(c, e);
                        size_t il;
                        const char *ip = sp(e, &il);
                        size_t r = row_ix(c, ip, il);
                        int t = RedisModule_KeyType(c->rowh[r]);
                        int lv = acl_level(c, c->rowk[r], ACL_R, ACL_W);
                        if ((t != REDISMODULE_KEYTYPE_EMPTY && t != REDISMODULE_KEYTYPE_HASH) || lv == 0 ||
                            (lv == 1 && t == REDISMODULE_KEYTYPE_HASH)) {
                            stop = 1; /* not claimable by this call: the claim ends before it */
                            break;
                        }
                        sv_push(&round, e);
                        if (round.cap > caprr) {
                            caprr = round.cap;
                            rrow = xrealloc(rrow, caprr * sizeof(*rrow));
                        }
                        rrow[round.n - 1] = r;
                    }
                    if (!RedisModule_ZsetRangeNext(pk)) break;
                }
                RedisModule_ZsetRangeStop(pk);
            }
            rv = round.v;
            rr = rrow;
            rn = round.n;
        }
        if (rn == 0) break;
        pop_n(c, pkp, pn, rv, rn);
        w += fw;
        for (size_t i = 0; i < rn; i++) {
            RedisModuleString *id = rv[i];
            size_t r = rr[i];
            RedisModuleString *row = c->rowk[r];
            RedisModuleKey *rk = c->rowh[r];
            if (RedisModule_KeyType(rk) != REDISMODULE_KEYTYPE_HASH) continue; /* a ghost: dropped */
            RedisModuleString *payload = NULL, *a = NULL;
            RedisModule_HashGet(rk, REDISMODULE_HASH_NONE, F_PAYLOAD, &payload, F_ATTEMPTS, &a, NULL);
            own(c, payload);
            own(c, a);
            double v = 0;
            size_t al;
            const char *ap = a ? sp(a, &al) : NULL;
            long long att;
            if (ap && canon_int(ap, al, &att))
                att++;
            else {
                if (!a || !lua_tonum(ap, &v)) v = 0;
                att = lua_long(v + 1);
            }
            e_hset2(c, rk, row, F_ATTEMPTS, ll_str(c, att), F_STATE, S_ACTIVE);
            if (c->rowtag[r]) c->rowtag[r] = 2;
            sv_push(&leased, id);
            nl++;
            RedisModule_ReplyWithString(c->ctx, id);
            if (payload)
                RedisModule_ReplyWithString(c->ctx, payload);
            else
                RedisModule_ReplyWithStringBuffer(c->ctx, "", 0);
            RedisModule_ReplyWithLongLong(c->ctx, att);
        }
    }
    RedisModule_ReplySetArrayLength(c->ctx, nl * 3);
    if (nl > 0) {
        deadline = (double)now_ms(c) + lease;
        if (c->replicate) dl = num_str(c, deadline);
    }
    zbatch zb = {0, 0};
    for (long i = nl - 1; i >= 0; i--) zb_add(c, &zb, ak, an, deadline, dl, leased.v[i]);
    zb_end_add(c, &zb, an);
    xfree(leased.v);
    xfree(round.v);
    xfree(rrow);
}

/* EMQ.CLAIM_BATCH 3 pending active base lease_ms n */
static int cmd_claim_batch(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    call c;
    static const char *const sfx[] = {"pending", "active", ""};
    double lease, n;
    if (shape(&c, ctx, argv, argc, "EMQ.CLAIM_BATCH", 3, 0) != 0) return REDISMODULE_OK;
    if (layout(&c, sfx) != 0 || fence(&c) != 0 || arg_int(&c, 0, "lease_ms", 1, &lease) != 0 ||
        arg_int(&c, 1, "n", 1, &n) != 0)
        goto done;
    int p = paused(&c);
    if (p < 0) goto done;
    if (p) {
        RedisModule_ReplyWithArray(ctx, 0);
        goto done;
    }
    RedisModuleKey *pk = openw(&c, c.keys[0]);
    RedisModuleKey *ak = openw(&c, c.keys[1]);
    if (!type_ok(pk, REDISMODULE_KEYTYPE_ZSET) || !type_ok(ak, REDISMODULE_KEYTYPE_ZSET)) {
        wrongtype(&c);
    } else if (rows_expect(&c, n), claim_check(&c, pk, n) == 0) {
        claim_run(&c, &pk, c.keys[0], ak, c.keys[1], lease, n);
    }
    RedisModule_CloseKey(pk);
    RedisModule_CloseKey(ak);
done:
    call_end(&c);
    return REDISMODULE_OK;
}

/* ---------------------------------------------------------------------- */
/* EMQ.COMPLETE_BATCH 2 active base retention_ms id1 token1 ... */

/* rows_typed: the row of every id at args[from], args[from+step], ... is a
 * hash or absent; -1 (replied) otherwise. */
static int rows_typed(call *c, int from, int to, int step) {
    for (int i = from; i < to; i += step) {
        size_t r = arg_row(c, i); /* before rowh is read: it may move */
        if (!type_ok(c->rowh[r], REDISMODULE_KEYTYPE_HASH)) return wrongtype(c);
    }
    return 0;
}

static int cmd_complete_batch(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    call c;
    static const char *const sfx[] = {"active", ""};
    double keep;
    char *out = NULL;
    if (shape(&c, ctx, argv, argc, "EMQ.COMPLETE_BATCH", 2, 0) != 0) return REDISMODULE_OK;
    if (layout(&c, sfx) != 0 || fence(&c) != 0 || arg_int(&c, 0, "retention_ms", 0, &keep) != 0) goto done;
    if (c.na % 2 != 1) {
        RedisModule_ReplyWithError(ctx, "EMQARG ids and tokens must come in pairs");
        goto done;
    }
    RedisModuleKey *ak = openw(&c, c.keys[0]);
    if (!type_ok(ak, REDISMODULE_KEYTYPE_ZSET)) {
        RedisModule_CloseKey(ak);
        wrongtype(&c);
        goto done;
    }
    rows_expect(&c, c.na / 2);
    if (rows_typed(&c, 1, c.na, 2) != 0) {
        RedisModule_CloseKey(ak);
        goto done;
    }
    int m = c.na / 2;
    out = xrealloc(NULL, (size_t)m + 1);
    /* Every read before the first write, as the script's loop of HMGETs
     * (a read of every row) before its writes: a row completed needs a
     * write too, and with retention its HSET is the first write
     * (refused at maxmemory). */
    for (int j = 0; j < m; j++) {
        size_t r = arg_row(&c, 1 + 2 * j);
        out[j] = 0;
        int lv = acl_level(&c, c.rowk[r], ACL_R, ACL_W);
        if (lv == 0) {
            RedisModule_CloseKey(ak);
            noperm(&c, c.rowk[r]);
            goto done;
        }
        if (c.rowtag[r]) continue; /* this id completed already */
        RedisModuleString *st, *at;
        row_fields(&c, c.rowh[r], &st, &at);
        if (eq_str(st, "active") && holds(at, c.args[2 + 2 * j])) {
            if (lv == 1 || (keep != 0 && c.oom)) {
                RedisModule_CloseKey(ak);
                if (lv == 1)
                    noperm(&c, c.rowk[r]);
                else
                    oom_err(&c);
                goto done;
            }
            c.rowtag[r] = 1;
            out[j] = 1;
        }
    }
    /* The writes in the script's order: each row's HSET and PEXPIRE, then
     * the ZREMs, then (retention 0) the DELs. */
    if (keep != 0)
        for (int j = 0; j < m; j++)
            if (out[j]) {
                size_t r = arg_row(&c, 1 + 2 * j);
                e_complete(&c, c.rowh[r], c.rowk[r], keep);
            }
    zbatch zb = {0, 0};
    for (int j = 0; j < m; j++)
        if (out[j]) zb_rem(&c, &zb, ak, c.keys[0], c.args[1 + 2 * j]);
    zb_end_rem(&c, &zb, ak, c.keys[0]);
    if (keep == 0)
        for (int j = 0; j < m; j++)
            if (out[j]) {
                size_t r = arg_row(&c, 1 + 2 * j);
                e_complete(&c, c.rowh[r], c.rowk[r], keep);
            }
    RedisModule_CloseKey(ak);
    RedisModule_ReplyWithArray(ctx, m);
    for (int j = 0; j < m; j++) RedisModule_ReplyWithLongLong(ctx, out[j]);
done:
    xfree(out);
    call_end(&c);
    return REDISMODULE_OK;
}

/* ---------------------------------------------------------------------- */
/* EMQ.SETTLE_CLAIM 5 pending active delayed dead base
 *   lease_ms n retention_ms nc nr nx completions retries releases */

/* settle_check: the script's reads and writes of the settlements' rows,
 * checked before the first write. Every settlement reads its row (HMGET);
 * a row is written (HSET, PEXPIRE, DEL) exactly when one of its
 * settlements holds as the row is before the call (the first that holds
 * sees it so: none before it wrote the row), so a write is needed then;
 * the usual user, allowed both, costs one check a row and no reads. At
 * maxmemory, with a retention, the first completion that holds makes
 * the script's first write an HSET: refused. -1 (replied) otherwise. */
static int settle_check(call *c, int r0, int x0, double keep) {
    for (int i = 6; i < c->na;) {
        int step = i < r0 ? 2 : i < x0 ? 5 : 2;
        size_t r = arg_row(c, i);
        int lv = acl_level(c, c->rowk[r], ACL_R, ACL_W);
        int oomcheck = i < r0 && c->oom && keep != 0;
        if (lv == 0) return noperm(c, c->rowk[r]);
        if (lv == 1 || oomcheck) {
            RedisModuleString *st, *at;
            row_fields(c, c->rowh[r], &st, &at);
            if (eq_str(st, "active") && holds(at, c->args[i + 1])) {
                if (lv == 1) return noperm(c, c->rowk[r]);
                return oom_err(c);
            }
        }
        i += step;
    }
    return 0;
}

static int cmd_settle_claim(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    call c;
    static const char *const sfx[] = {"pending", "active", "delayed", "dead", ""};
    double lease, n, keep, nc, nr, nx, d;
    char *settled = NULL;
    RedisModuleKey *pk = NULL, *ak = NULL, *dk = NULL, *xk = NULL;
    if (shape(&c, ctx, argv, argc, "EMQ.SETTLE_CLAIM", 5, 0) != 0) return REDISMODULE_OK;
    if (layout(&c, sfx) != 0 || fence(&c) != 0 || arg_int(&c, 0, "lease_ms", 1, &lease) != 0 ||
        arg_int(&c, 1, "n", 0, &n) != 0 || arg_int(&c, 2, "retention_ms", 0, &keep) != 0 ||
        arg_int(&c, 3, "nc", 0, &nc) != 0 || arg_int(&c, 4, "nr", 0, &nr) != 0 || arg_int(&c, 5, "nx", 0, &nx) != 0)
        goto done;
    if ((double)c.na != 6 + 2 * nc + 5 * nr + 2 * nx) {
        RedisModule_ReplyWithError(ctx, "EMQARG settle_claim takes 6 + 2*nc + 5*nr + 2*nx arguments");
        goto done;
    }
    int r0 = 6 + 2 * (int)nc; /* the first retry, 0-based */
    int x0 = r0 + 5 * (int)nr; /* the first release */
    for (int i = r0; i < x0; i += 5)
        if (arg_int(&c, i + 2, "delay_ms", 0, &d) != 0 || arg_int(&c, i + 3, "max_attempts", 0, &d) != 0) goto done;

    /* Every check before the first write: the sets, meta (the script
     * reads it only to claim), the rows. */
    int p = n > 0 ? paused(&c) : 0;
    if (p < 0) goto done;
    pk = openw(&c, c.keys[0]);
    ak = openw(&c, c.keys[1]);
    dk = openw(&c, c.keys[2]);
    xk = openw(&c, c.keys[3]);
    if (!type_ok(pk, REDISMODULE_KEYTYPE_ZSET) || !type_ok(ak, REDISMODULE_KEYTYPE_ZSET) ||
        !type_ok(dk, REDISMODULE_KEYTYPE_ZSET) || !type_ok(xk, REDISMODULE_KEYTYPE_ZSET)) {
        wrongtype(&c);
        goto done;
    }
    rows_expect(&c, nc + nr + nx + (p ? 0 : n));
    if (rows_typed(&c, 6, r0, 2) != 0 || rows_typed(&c, r0, x0, 5) != 0 || rows_typed(&c, x0, c.na, 2) != 0) goto done;
    if (settle_check(&c, r0, x0, keep) != 0) goto done;
    if (n > 0 && !p && claim_check(&c, pk, n) != 0) goto done;

    int total = (int)(nc + nr + nx), ns = 0;
    settled = xrealloc(NULL, (size_t)total + 1);
    /* Completions: as complete; the ids leave active after the claim. */
    for (int i = 6; i < r0; i += 2) {
        size_t r = arg_row(&c, i);
        settled[ns] = 0;
        if (!c.rowtag[r]) {
            RedisModuleKey *rk = c.rowh[r];
            RedisModuleString *st, *at;
            row_fields(&c, rk, &st, &at);
            if (eq_str(st, "active") && holds(at, c.args[i + 1])) {
                c.rowtag[r] = 1;
                e_complete(&c, rk, c.rowk[r], keep);
                settled[ns] = 1;
            }
        }
        ns++;
    }
    /* Retries: as retry. */
    for (int i = r0; i < x0; i += 5) {
        RedisModuleString *id = c.args[i];
        size_t r = arg_row(&c, i);
        RedisModuleString *row = c.rowk[r];
        RedisModuleKey *rk = c.rowh[r];
        RedisModuleString *st, *at;
        row_fields(&c, rk, &st, &at);
        settled[ns] = 0;
        if (eq_str(st, "active") && holds(at, c.args[i + 1])) {
            double delay = 0, max = 0, attempts = 0;
            str_num(c.args[i + 2], &delay);
            str_num(c.args[i + 3], &max);
            str_num(at, &attempts);
            settled[ns] = (char)settle_retry(&c, rk, row, id, attempts, delay, max, c.args[i + 4], ak, c.keys[1], pk,
                                             c.keys[0], dk, c.keys[2], xk, c.keys[3], 1);
        }
        ns++;
    }
    /* Releases: back to pending, attempts kept. */
    for (int i = x0; i < c.na; i += 2) {
        RedisModuleString *id = c.args[i];
        size_t r = arg_row(&c, i);
        RedisModuleString *row = c.rowk[r];
        RedisModuleKey *rk = c.rowh[r];
        RedisModuleString *st, *at;
        row_fields(&c, rk, &st, &at);
        settled[ns] = 0;
        if (eq_str(st, "active") && holds(at, c.args[i + 1])) {
            e_zrem(&c, ak, c.keys[1], id);
            e_hset2(&c, rk, row, F_STATE, S_PENDING, NULL, NULL);
            e_zadd(&c, pk, c.keys[0], 0, S_ZERO, id);
            settled[ns] = 1;
        }
        ns++;
    }
    RedisModule_ReplyWithArray(ctx, 2);
    RedisModule_ReplyWithArray(ctx, ns);
    for (int j = 0; j < ns; j++) RedisModule_ReplyWithLongLong(ctx, settled[j]);
    if (n == 0 || p)
        RedisModule_ReplyWithArray(ctx, 0);
    else
        claim_run(&c, &pk, c.keys[0], ak, c.keys[1], lease, n);
    /* The completed ids leave active, but those claimed again. */
    zbatch zb = {0, 0};
    for (int i = 6, j = 0; i < r0; i += 2, j++)
        if (settled[j] && c.rowtag[arg_row(&c, i)] == 1) zb_rem(&c, &zb, ak, c.keys[1], c.args[i]);
    zb_end_rem(&c, &zb, ak, c.keys[1]);
done:
    RedisModule_CloseKey(pk);
    RedisModule_CloseKey(ak);
    RedisModule_CloseKey(dk);
    RedisModule_CloseKey(xk);
    xfree(settled);
    call_end(&c);
    return REDISMODULE_OK;
}

/* ---------------------------------------------------------------------- */
/* Registration. */

typedef struct {
    const char *name;
    RedisModuleCmdFunc fn;
    const char *flags;
    int nk; /* the keys, after numkeys */
    const char *summary;
} cmddef;

static const cmddef cmds[] = {
    {"emq.enqueue", cmd_enqueue, "write getkeys-api", 2, "enqueue: admit one job into pending"},
    {"emq.claim", cmd_claim, "write getkeys-api", 3, "claim: lease the oldest pending job"},
    {"emq.complete", cmd_complete, "write getkeys-api", 2, "complete: finish a claimed job"},
    {"emq.retry", cmd_retry, "write getkeys-api", 5, "retry: give back a failed job"},
    {"emq.promote", cmd_promote, "write getkeys-api", 3, "promote: move due delayed jobs to pending"},
    {"emq.enqueue_at", cmd_enqueue_at, "write getkeys-api", 2, "enqueue_at: admit one job into delayed"},
    {"emq.enqueue_batch", cmd_enqueue_batch, "write getkeys-api", 2, "enqueue_batch: admit several jobs"},
    {"emq.claim_batch", cmd_claim_batch, "write getkeys-api", 3, "claim_batch: lease up to n pending jobs"},
    {"emq.complete_batch", cmd_complete_batch, "write getkeys-api", 2, "complete_batch: complete several jobs"},
    {"emq.settle_claim", cmd_settle_claim, "write getkeys-api", 5, "settle_claim: settle outcomes, claim the next batch"},
    {"emq.extend", cmd_extend, "write getkeys-api", 2, "extend: push a held lease's deadline"},
};

static RedisModuleString *mk(const char *s) { return RedisModule_CreateString(NULL, s, strlen(s)); }

/* The strings made at load, and the key cache: freed at unload. */
static RedisModuleString **const consts[] = {&S_PENDING, &S_ACTIVE, &S_DELAYED, &S_DEAD, &S_COMPLETED,
                                             &S_ZERO,    &S_XX,     &S_VERSION, &S_EMPTY, &F_STATE,
                                             &F_ATTEMPTS, &F_PAYLOAD, &F_ERROR,  &F_PAUSED};

static void free_all(void) {
    for (size_t i = 0; i < sizeof(consts) / sizeof(consts[0]); i++)
        if (*consts[i]) {
            RedisModule_FreeString(NULL, *consts[i]);
            *consts[i] = NULL;
        }
    for (int i = 0; i < NUMS; i++)
        if (S_NUM[i]) {
            RedisModule_FreeString(NULL, S_NUM[i]);
            S_NUM[i] = NULL;
        }
    for (int i = 0; i < KC_SIZE; i++)
        if (kcache[i].s) {
            RedisModule_FreeString(NULL, kcache[i].s);
            kcache[i].s = NULL;
        }
}

/* MODULE UNLOAD: everything the module made, freed (the server drops the
 * commands and the event subscriptions itself). */
int RedisModule_OnUnload(RedisModuleCtx *ctx) {
    (void)ctx;
    free_all();
    replicating = 0;
    fence_client = 0;
    return REDISMODULE_OK;
}

static const RedisModuleCommandInfoVersion info_version = {
    .version = 1,
    .sizeof_historyentry = sizeof(RedisModuleCommandHistoryEntry),
    .sizeof_keyspec = sizeof(RedisModuleCommandKeySpec),
    .sizeof_arg = sizeof(RedisModuleCommandArg),
};

/* arg_is: the load argument a is the word w, in any case. */
static int arg_is(RedisModuleString *a, const char *w) {
    size_t l, wl = strlen(w);
    const char *p = RedisModule_StringPtrLen(a, &l);
    if (!p || l != wl) return 0;
    for (size_t i = 0; i < l; i++)
        if (tolower((unsigned char)p[i]) != w[i]) return 0;
    return 1;
}

/* load_args reads the load arguments: none, or "fence key|client". The
 * default is key on a standalone server, client on a cluster-enabled one,
 * where key is refused. Returns -1 after logging why. */
static int load_args(RedisModuleCtx *ctx, RedisModuleString **argv, int argc, int cluster) {
    fence_client = cluster;
    if (argc == 0) return 0;
    if (argc != 2 || !argv || !argv[0] || !argv[1] || !arg_is(argv[0], "fence") ||
        !(arg_is(argv[1], "key") || arg_is(argv[1], "client"))) {
        RedisModule_Log(ctx, "warning", "emq: bad load arguments: want none, or \"fence key\" or \"fence client\"");
        return -1;
    }
    if (arg_is(argv[1], "key")) {
        if (cluster) {
            RedisModule_Log(ctx, "warning",
                            "emq: refusing \"fence key\" on a cluster-enabled server: {emq}:version is in one slot "
                            "of one primary, not in a queue's; load with \"fence client\" (the default here)");
            return -1;
        }
        fence_client = 0;
    } else {
        fence_client = 1;
    }
    return 0;
}

int RedisModule_OnLoad(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    if (emq_api_init(ctx, "emq", 1) != REDISMODULE_OK) return REDISMODULE_ERR;
    void *vk = NULL; /* Valkey exports its own names beside Redis's */
    valkey = RedisModule_GetApi("ValkeyModule_Alloc", &vk) == REDISMODULE_OK && vk != NULL;
    int cluster = (RedisModule_GetContextFlags(ctx) & REDISMODULE_CTX_FLAGS_CLUSTER) != 0;
    if (load_args(ctx, argv, argc, cluster) != 0) return REDISMODULE_ERR;
    if (fence_client)
        RedisModule_Log(ctx, "notice",
                        "emq: fence client: no call reads {emq}:version; the client checks it at connect%s",
                        cluster ? " (cluster-enabled server)" : "");
    /* Propagation: a fork (RDB, AOF rewrite, a replica's sync) or a role
     * change turns it on for good; so does a replica, a backlog or
     * another role than primary at load (MODULE LOAD at run time). */
    RedisModuleEvent fork = {REDISMODULE_EVENT_FORK_CHILD, 1};
    RedisModuleEvent role = {REDISMODULE_EVENT_REPLICATION_ROLE_CHANGED, 1};
    if (RedisModule_SubscribeToServerEvent(ctx, fork, on_event) != REDISMODULE_OK ||
        RedisModule_SubscribeToServerEvent(ctx, role, on_event) != REDISMODULE_OK)
        replicating = 1;
    RedisModuleServerInfoData *info = RedisModule_GetServerInfo(ctx, "replication");
    if (!info) {
        replicating = 1;
    } else {
        int e1 = 0, e2 = 0;
        long long replicas = RedisModule_ServerInfoGetFieldSigned(info, "connected_slaves", &e1);
        long long backlog = RedisModule_ServerInfoGetFieldSigned(info, "repl_backlog_active", &e2);
        if (e1 || e2 || replicas > 0 || backlog > 0 || !(RedisModule_GetContextFlags(ctx) & REDISMODULE_CTX_FLAGS_MASTER))
            replicating = 1;
        RedisModule_FreeServerInfo(ctx, info);
    }
    S_PENDING = mk("pending");
    S_ACTIVE = mk("active");
    S_DELAYED = mk("delayed");
    S_DEAD = mk("dead");
    S_COMPLETED = mk("completed");
    S_ZERO = mk("0");
    S_XX = mk("XX");
    S_VERSION = mk("{emq}:version");
    S_EMPTY = mk("");
    F_STATE = mk("state");
    F_ATTEMPTS = mk("attempts");
    F_PAYLOAD = mk("payload");
    F_ERROR = mk("error");
    F_PAUSED = mk("paused");
    for (int i = 0; i < NUMS; i++) S_NUM[i] = RedisModule_CreateStringFromLongLong(NULL, i);
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        const cmddef *d = &cmds[i];
        if (RedisModule_CreateCommand(ctx, d->name, d->fn, d->flags, 0, 0, 0) != REDISMODULE_OK) {
            free_all();
            return REDISMODULE_ERR;
        }
        RedisModuleCommand *cmd = RedisModule_GetCommand(ctx, d->name);
        if (!cmd) {
            free_all();
            return REDISMODULE_ERR;
        }
        /* The keys as EVAL declares them: numkeys at argv[1], the keys after. */
        RedisModuleCommandKeySpec specs[2];
        memset(specs, 0, sizeof specs);
        specs[0].flags = REDISMODULE_CMD_KEY_RW | REDISMODULE_CMD_KEY_ACCESS | REDISMODULE_CMD_KEY_UPDATE;
        specs[0].begin_search_type = REDISMODULE_KSPEC_BS_INDEX;
        specs[0].bs.index.pos = 1;
        specs[0].find_keys_type = REDISMODULE_KSPEC_FK_KEYNUM;
        specs[0].fk.keynum.keynumidx = 0;
        specs[0].fk.keynum.firstkey = 1;
        specs[0].fk.keynum.keystep = 1;
        RedisModuleCommandInfo info;
        memset(&info, 0, sizeof info);
        info.version = &info_version;
        info.summary = d->summary;
        info.since = "1.0.0";
        info.arity = -(2 + d->nk);
        info.key_specs = specs;
        if (RedisModule_SetCommandInfo(cmd, &info) != REDISMODULE_OK) {
            free_all();
            return REDISMODULE_ERR;
        }
    }
    return REDISMODULE_OK;
}
