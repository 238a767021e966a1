/*
 * A foreign module for emq's tests (native_identity_test.go): it registers
 * the eleven EMQ.* command names of the native module (module/emq.c) under
 * another module name, and answers every call with 1 while storing
 * nothing. Build: cc -std=c11 -Wall -Wextra -fPIC -shared
 * [-DMODNAME='"emq"' -DMODVER=2] [-DMODCMDS=1] -o foreign.so foreign.c
 * (MODCMDS: register only the first that many names, emq.enqueue first).
 */
#include <stddef.h>
#include <stdint.h>

#ifndef MODNAME
#define MODNAME "notemq"
#endif
#ifndef MODVER
#define MODVER 1
#endif
#ifndef MODCMDS
#define MODCMDS 11
#endif

typedef struct RedisModuleCtx RedisModuleCtx;
typedef struct RedisModuleString RedisModuleString;
typedef int (*CmdFunc)(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);

static int (*GetApi)(const char *name, void *ptr);
static void (*SetModuleAttribs)(RedisModuleCtx *ctx, const char *name, int ver, int apiver);
static int (*CreateCommand)(RedisModuleCtx *ctx, const char *name, CmdFunc fn, const char *flags, int first,
                            int last, int step);
static int (*ReplyWithLongLong)(RedisModuleCtx *ctx, long long ll);

static const char *const names[] = {
    "emq.enqueue",        "emq.enqueue_at",     "emq.claim",        "emq.complete",
    "emq.retry",          "emq.extend",         "emq.promote",      "emq.enqueue_batch",
    "emq.claim_batch",    "emq.complete_batch", "emq.settle_claim",
};

static int fake(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    (void)argv;
    (void)argc;
    return ReplyWithLongLong(ctx, 1);
}

int RedisModule_OnLoad(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    (void)argv;
    (void)argc;
    if (!ctx) return 1;
    GetApi = (int (*)(const char *, void *))(uintptr_t)((void **)ctx)[0];
    if (!GetApi || GetApi("RedisModule_SetModuleAttribs", (void *)&SetModuleAttribs) != 0 ||
        GetApi("RedisModule_CreateCommand", (void *)&CreateCommand) != 0 ||
        GetApi("RedisModule_ReplyWithLongLong", (void *)&ReplyWithLongLong) != 0)
        return 1;
    SetModuleAttribs(ctx, MODNAME, MODVER, 1);
    for (size_t i = 0; i < sizeof names / sizeof names[0] && i < MODCMDS; i++)
        if (CreateCommand(ctx, names[i], fake, "write", 0, 0, 0) != 0) return 1;
    return 0;
}
