/*
 * emq_api.h: the part of the Valkey/Redis module API that emq.c uses,
 * declared from the documented API (the module API reference and the ABI
 * the server exports through its GetApi function). No server header is
 * included: every type the module handles is opaque but for the few
 * structs SetCommandInfo reads, laid out as the documented API lays them.
 *
 * The server hands the module a context whose first word is its GetApi
 * function; emq_api_init fetches each pointer by name, "RedisModule_<name>",
 * which Redis 7 exports and Valkey 8 exports beside "ValkeyModule_<name>".
 */
#ifndef EMQ_API_H
#define EMQ_API_H

#include <stddef.h>
#include <stdint.h>

typedef struct RedisModuleCtx RedisModuleCtx;
typedef struct RedisModuleKey RedisModuleKey;
typedef struct RedisModuleString RedisModuleString;
typedef struct RedisModuleCommand RedisModuleCommand;
typedef struct RedisModuleServerInfoData RedisModuleServerInfoData;
typedef struct RedisModuleCallReply RedisModuleCallReply;
typedef struct RedisModuleUser RedisModuleUser;

/* A server event: its id and the version of the data it passes. */
typedef struct {
    uint64_t id;
    uint64_t dataver;
} RedisModuleEvent;
typedef void (*RedisModuleEventCallback)(RedisModuleCtx *ctx, RedisModuleEvent eid, uint64_t subevent, void *data);

#define REDISMODULE_EVENT_REPLICATION_ROLE_CHANGED 0
#define REDISMODULE_EVENT_FORK_CHILD 13
typedef long long mstime_t;
typedef int (*RedisModuleCmdFunc)(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);

#define REDISMODULE_OK 0
#define REDISMODULE_ERR 1
#define REDISMODULE_APIVER_1 1

#define REDISMODULE_READ (1 << 0)
#define REDISMODULE_WRITE (1 << 1)

#define REDISMODULE_KEYTYPE_EMPTY 0
#define REDISMODULE_KEYTYPE_STRING 1
#define REDISMODULE_KEYTYPE_HASH 3
#define REDISMODULE_KEYTYPE_ZSET 5

#define REDISMODULE_ZADD_XX (1 << 0)
#define REDISMODULE_HASH_NONE 0
#define REDISMODULE_HASH_CFIELDS (1 << 2)

#define REDISMODULE_POSTPONED_LEN -1
#define REDISMODULE_REPLY_INTEGER 2
#define REDISMODULE_CTX_FLAGS_LUA (1 << 0)
#define REDISMODULE_CTX_FLAGS_MASTER (1 << 2)
#define REDISMODULE_CTX_FLAGS_CLUSTER (1 << 5)
#define REDISMODULE_CTX_FLAGS_AOF (1 << 6)
#define REDISMODULE_CTX_FLAGS_OOM (1 << 10)
#define REDISMODULE_CTX_FLAGS_REPLICATED (1 << 12)
#define REDISMODULE_CTX_FLAGS_LOADING (1 << 13)

#define REDISMODULE_ZADD_ADDED (1 << 2)
#define REDISMODULE_ZADD_UPDATED (1 << 3)

#define REDISMODULE_ACL_LOG_KEY 2

#define REDISMODULE_NOTIFY_GENERIC (1 << 2)
#define REDISMODULE_NOTIFY_HASH (1 << 6)
#define REDISMODULE_NOTIFY_ZSET (1 << 7)

#define REDISMODULE_ERRORMSG_WRONGTYPE "WRONGTYPE Operation against a key holding the wrong kind of value"

/* Key specs (SetCommandInfo), as the documented API lays them out. */
typedef enum {
    REDISMODULE_KSPEC_BS_INVALID = 0,
    REDISMODULE_KSPEC_BS_UNKNOWN,
    REDISMODULE_KSPEC_BS_INDEX,
    REDISMODULE_KSPEC_BS_KEYWORD
} RedisModuleKeySpecBeginSearchType;

typedef enum {
    REDISMODULE_KSPEC_FK_OMITTED = 0,
    REDISMODULE_KSPEC_FK_UNKNOWN,
    REDISMODULE_KSPEC_FK_RANGE,
    REDISMODULE_KSPEC_FK_KEYNUM
} RedisModuleKeySpecFindKeysType;

#define REDISMODULE_CMD_KEY_RW (1ULL << 1)
#define REDISMODULE_CMD_KEY_ACCESS (1ULL << 4)
#define REDISMODULE_CMD_KEY_UPDATE (1ULL << 5)
#define REDISMODULE_CMD_KEY_INSERT (1ULL << 6)
#define REDISMODULE_CMD_KEY_DELETE (1ULL << 7)

typedef struct {
    const char *notes;
    uint64_t flags;
    RedisModuleKeySpecBeginSearchType begin_search_type;
    union {
        struct { int pos; } index;
        struct { const char *keyword; int startfrom; } keyword;
    } bs;
    RedisModuleKeySpecFindKeysType find_keys_type;
    union {
        struct { int lastkey; int keystep; int limit; } range;
        struct { int keynumidx; int firstkey; int keystep; } keynum;
    } fk;
} RedisModuleCommandKeySpec;

typedef struct {
    const char *since;
    const char *changes;
} RedisModuleCommandHistoryEntry;

/* Only its size matters here: no args are declared (args is NULL). */
typedef struct RedisModuleCommandArg {
    const char *name;
    int type;
    int key_spec_index;
    const char *token;
    const char *summary;
    const char *since;
    int flags;
    const char *deprecated_since;
    struct RedisModuleCommandArg *subargs;
    const char *display_text;
} RedisModuleCommandArg;

typedef struct {
    int version;
    size_t sizeof_historyentry;
    size_t sizeof_keyspec;
    size_t sizeof_arg;
} RedisModuleCommandInfoVersion;

typedef struct {
    const RedisModuleCommandInfoVersion *version;
    const char *summary;
    const char *complexity;
    const char *since;
    RedisModuleCommandHistoryEntry *history;
    const char *tips;
    int arity;
    RedisModuleCommandKeySpec *key_specs;
    RedisModuleCommandArg *args;
} RedisModuleCommandInfo;

/* The function pointers, defined in emq.c (EMQ_API_DEFINE). */
#ifdef EMQ_API_DEFINE
#define EMQ_EXTERN
#else
#define EMQ_EXTERN extern
#endif

EMQ_EXTERN int (*RedisModule_GetApi)(const char *, void *);
EMQ_EXTERN void (*RedisModule_SetModuleAttribs)(RedisModuleCtx *ctx, const char *name, int ver, int apiver);
EMQ_EXTERN int (*RedisModule_IsModuleNameBusy)(const char *name);
EMQ_EXTERN int (*RedisModule_CreateCommand)(RedisModuleCtx *ctx, const char *name, RedisModuleCmdFunc fn,
                                            const char *flags, int firstkey, int lastkey, int keystep);
EMQ_EXTERN RedisModuleCommand *(*RedisModule_GetCommand)(RedisModuleCtx *ctx, const char *name);
EMQ_EXTERN int (*RedisModule_SetCommandInfo)(RedisModuleCommand *cmd, const RedisModuleCommandInfo *info);
EMQ_EXTERN int (*RedisModule_GetContextFlags)(RedisModuleCtx *ctx);
EMQ_EXTERN int (*RedisModule_IsKeysPositionRequest)(RedisModuleCtx *ctx);
EMQ_EXTERN void (*RedisModule_KeyAtPos)(RedisModuleCtx *ctx, int pos);
EMQ_EXTERN void (*RedisModule_Log)(RedisModuleCtx *ctx, const char *level, const char *fmt, ...);
EMQ_EXTERN void *(*RedisModule_Alloc)(size_t bytes);
EMQ_EXTERN void *(*RedisModule_Realloc)(void *ptr, size_t bytes);
EMQ_EXTERN void (*RedisModule_Free)(void *ptr);

EMQ_EXTERN int (*RedisModule_WrongArity)(RedisModuleCtx *ctx);
EMQ_EXTERN int (*RedisModule_ReplyWithLongLong)(RedisModuleCtx *ctx, long long ll);
EMQ_EXTERN int (*RedisModule_ReplyWithError)(RedisModuleCtx *ctx, const char *err);
EMQ_EXTERN int (*RedisModule_ReplyWithArray)(RedisModuleCtx *ctx, long len);
EMQ_EXTERN void (*RedisModule_ReplySetArrayLength)(RedisModuleCtx *ctx, long len);
EMQ_EXTERN int (*RedisModule_ReplyWithStringBuffer)(RedisModuleCtx *ctx, const char *buf, size_t len);
EMQ_EXTERN int (*RedisModule_ReplyWithString)(RedisModuleCtx *ctx, RedisModuleString *str);
EMQ_EXTERN int (*RedisModule_ReplyWithNull)(RedisModuleCtx *ctx);

EMQ_EXTERN RedisModuleString *(*RedisModule_CreateString)(RedisModuleCtx *ctx, const char *ptr, size_t len);
EMQ_EXTERN RedisModuleString *(*RedisModule_CreateStringFromLongLong)(RedisModuleCtx *ctx, long long ll);
EMQ_EXTERN void (*RedisModule_FreeString)(RedisModuleCtx *ctx, RedisModuleString *str);
EMQ_EXTERN void (*RedisModule_RetainString)(RedisModuleCtx *ctx, RedisModuleString *str);
EMQ_EXTERN const char *(*RedisModule_StringPtrLen)(const RedisModuleString *str, size_t *len);
EMQ_EXTERN int (*RedisModule_StringToLongLong)(const RedisModuleString *str, long long *ll);

EMQ_EXTERN RedisModuleKey *(*RedisModule_OpenKey)(RedisModuleCtx *ctx, RedisModuleString *name, int mode);
EMQ_EXTERN void (*RedisModule_CloseKey)(RedisModuleKey *kp);
EMQ_EXTERN int (*RedisModule_KeyType)(RedisModuleKey *kp);
EMQ_EXTERN int (*RedisModule_DeleteKey)(RedisModuleKey *kp);
EMQ_EXTERN int (*RedisModule_SetAbsExpire)(RedisModuleKey *kp, mstime_t expire);
EMQ_EXTERN size_t (*RedisModule_ValueLength)(RedisModuleKey *kp);
EMQ_EXTERN char *(*RedisModule_StringDMA)(RedisModuleKey *kp, size_t *len, int mode);

EMQ_EXTERN int (*RedisModule_ZsetAdd)(RedisModuleKey *kp, double score, RedisModuleString *ele, int *flagsptr);
EMQ_EXTERN int (*RedisModule_ZsetRem)(RedisModuleKey *kp, RedisModuleString *ele, int *deleted);
EMQ_EXTERN int (*RedisModule_ZsetScore)(RedisModuleKey *kp, RedisModuleString *ele, double *score);
EMQ_EXTERN int (*RedisModule_ZsetFirstInScoreRange)(RedisModuleKey *kp, double min, double max, int minex, int maxex);
EMQ_EXTERN RedisModuleString *(*RedisModule_ZsetRangeCurrentElement)(RedisModuleKey *kp, double *score);
EMQ_EXTERN int (*RedisModule_ZsetRangeNext)(RedisModuleKey *kp);
EMQ_EXTERN int (*RedisModule_ZsetRangeEndReached)(RedisModuleKey *kp);
EMQ_EXTERN void (*RedisModule_ZsetRangeStop)(RedisModuleKey *kp);
EMQ_EXTERN int (*RedisModule_HashSet)(RedisModuleKey *kp, int flags, ...);
EMQ_EXTERN int (*RedisModule_HashGet)(RedisModuleKey *kp, int flags, ...);

EMQ_EXTERN RedisModuleCallReply *(*RedisModule_Call)(RedisModuleCtx *ctx, const char *cmdname, const char *fmt, ...);
EMQ_EXTERN int (*RedisModule_CallReplyType)(RedisModuleCallReply *reply);
EMQ_EXTERN long long (*RedisModule_CallReplyInteger)(RedisModuleCallReply *reply);
EMQ_EXTERN void (*RedisModule_FreeCallReply)(RedisModuleCallReply *reply);
EMQ_EXTERN int (*RedisModule_Replicate)(RedisModuleCtx *ctx, const char *cmd, const char *fmt, ...);
EMQ_EXTERN int (*RedisModule_NotifyKeyspaceEvent)(RedisModuleCtx *ctx, int type, const char *event,
                                                  RedisModuleString *key);
EMQ_EXTERN mstime_t (*RedisModule_Milliseconds)(void);
EMQ_EXTERN RedisModuleServerInfoData *(*RedisModule_GetServerInfo)(RedisModuleCtx *ctx, const char *section);
EMQ_EXTERN void (*RedisModule_FreeServerInfo)(RedisModuleCtx *ctx, RedisModuleServerInfoData *data);
EMQ_EXTERN long long (*RedisModule_ServerInfoGetFieldSigned)(RedisModuleServerInfoData *data, const char *field,
                                                             int *out_err);
EMQ_EXTERN unsigned long long (*RedisModule_GetClientId)(RedisModuleCtx *ctx);
EMQ_EXTERN RedisModuleString *(*RedisModule_GetClientUserNameById)(RedisModuleCtx *ctx, uint64_t id);
EMQ_EXTERN RedisModuleUser *(*RedisModule_GetModuleUserFromUserName)(RedisModuleString *name);
EMQ_EXTERN int (*RedisModule_FreeModuleUser)(RedisModuleUser *user);
EMQ_EXTERN int (*RedisModule_ACLCheckKeyPermissions)(RedisModuleUser *user, RedisModuleString *key, int flags);
EMQ_EXTERN int (*RedisModule_ACLAddLogEntry)(RedisModuleCtx *ctx, RedisModuleUser *user, RedisModuleString *object,
                                            int reason);
EMQ_EXTERN int (*RedisModule_SubscribeToServerEvent)(RedisModuleCtx *ctx, RedisModuleEvent event,
                                                     RedisModuleEventCallback callback);

/* emq_api_init fills every pointer above from ctx's GetApi and registers
 * the module's name; REDISMODULE_ERR when one is missing. */
static inline int emq_api_init(RedisModuleCtx *ctx, const char *name, int ver) {
    void *getapi = ((void **)ctx)[0];
    RedisModule_GetApi = (int (*)(const char *, void *))(uintptr_t)getapi;
#define EMQ_GET(n) \
    if (RedisModule_GetApi("RedisModule_" #n, (void *)&RedisModule_##n) != REDISMODULE_OK) return REDISMODULE_ERR
    EMQ_GET(SetModuleAttribs);
    EMQ_GET(IsModuleNameBusy);
    EMQ_GET(CreateCommand);
    EMQ_GET(GetCommand);
    EMQ_GET(SetCommandInfo);
    EMQ_GET(GetContextFlags);
    EMQ_GET(IsKeysPositionRequest);
    EMQ_GET(KeyAtPos);
    EMQ_GET(Log);
    EMQ_GET(Alloc);
    EMQ_GET(Realloc);
    EMQ_GET(Free);
    EMQ_GET(WrongArity);
    EMQ_GET(ReplyWithLongLong);
    EMQ_GET(ReplyWithError);
    EMQ_GET(ReplyWithArray);
    EMQ_GET(ReplySetArrayLength);
    EMQ_GET(ReplyWithStringBuffer);
    EMQ_GET(ReplyWithString);
    EMQ_GET(ReplyWithNull);
    EMQ_GET(CreateString);
    EMQ_GET(CreateStringFromLongLong);
    EMQ_GET(FreeString);
    EMQ_GET(RetainString);
    EMQ_GET(StringPtrLen);
    EMQ_GET(StringToLongLong);
    EMQ_GET(OpenKey);
    EMQ_GET(CloseKey);
    EMQ_GET(KeyType);
    EMQ_GET(DeleteKey);
    EMQ_GET(SetAbsExpire);
    EMQ_GET(ValueLength);
    EMQ_GET(StringDMA);
    EMQ_GET(ZsetAdd);
    EMQ_GET(ZsetRem);
    EMQ_GET(ZsetScore);
    EMQ_GET(ZsetFirstInScoreRange);
    EMQ_GET(ZsetRangeCurrentElement);
    EMQ_GET(ZsetRangeNext);
    EMQ_GET(ZsetRangeEndReached);
    EMQ_GET(ZsetRangeStop);
    EMQ_GET(HashSet);
    EMQ_GET(HashGet);
    EMQ_GET(Call);
    EMQ_GET(CallReplyType);
    EMQ_GET(CallReplyInteger);
    EMQ_GET(FreeCallReply);
    EMQ_GET(Replicate);
    EMQ_GET(NotifyKeyspaceEvent);
    EMQ_GET(Milliseconds);
    EMQ_GET(GetServerInfo);
    EMQ_GET(FreeServerInfo);
    EMQ_GET(ServerInfoGetFieldSigned);
    EMQ_GET(SubscribeToServerEvent);
    EMQ_GET(GetClientId);
    EMQ_GET(GetClientUserNameById);
    EMQ_GET(GetModuleUserFromUserName);
    EMQ_GET(FreeModuleUser);
    EMQ_GET(ACLCheckKeyPermissions);
    EMQ_GET(ACLAddLogEntry);
#undef EMQ_GET
    if (RedisModule_IsModuleNameBusy(name)) return REDISMODULE_ERR;
    RedisModule_SetModuleAttribs(ctx, name, ver, REDISMODULE_APIVER_1);
    return REDISMODULE_OK;
}

#endif
