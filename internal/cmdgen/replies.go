package main

// replies is our reply-shape table: COMMAND DOCS does not describe
// replies, so the shape of each command's reply was read from the
// reply_schema of the command definitions in the Valkey 8.0.1 source
// (src/commands/*.json) and written here as the decoder of package cmds
// that folds it, under RESP2 and RESP3, to one Go value. A command whose
// reply depends on its options (ZRANGE with WITHSCORES) names the shape
// of its commonest form and the doc comment says which decoder the other
// takes. Commands not listed have ShapeUnknown: read them with the
// resp.Value accessors (AsInt, AsFloat, …).
var replies = map[string]string{
	// strings
	"get": "ShapeString", "getdel": "ShapeString", "getex": "ShapeString", "getset": "ShapeString",
	"getrange": "ShapeString", "substr": "ShapeString", "lcs": "ShapeUnknown",
	"set": "ShapeOKOrNil", "setex": "ShapeOK", "psetex": "ShapeOK", "mset": "ShapeOK",
	"setnx": "ShapeBool", "msetnx": "ShapeBool", "setrange": "ShapeInt", "strlen": "ShapeInt",
	"append": "ShapeInt", "incr": "ShapeInt", "decr": "ShapeInt", "incrby": "ShapeInt", "decrby": "ShapeInt",
	"incrbyfloat": "ShapeFloat", "mget": "ShapeNullStrings",
	// keys
	"del": "ShapeInt", "unlink": "ShapeInt", "exists": "ShapeInt", "touch": "ShapeInt",
	"expire": "ShapeBool", "pexpire": "ShapeBool", "expireat": "ShapeBool", "pexpireat": "ShapeBool",
	"persist": "ShapeBool", "ttl": "ShapeInt", "pttl": "ShapeInt", "expiretime": "ShapeInt", "pexpiretime": "ShapeInt",
	"type": "ShapeStatus", "rename": "ShapeOK", "renamenx": "ShapeBool", "copy": "ShapeBool", "move": "ShapeBool",
	"keys": "ShapeStrings", "randomkey": "ShapeString", "scan": "ShapeScan", "dump": "ShapeString",
	"object|encoding": "ShapeString", "object|refcount": "ShapeIntOrNil", "object|idletime": "ShapeIntOrNil", "object|freq": "ShapeIntOrNil",
	"sort": "ShapeStrings", "sort_ro": "ShapeStrings",
	// hashes
	"hget": "ShapeString", "hset": "ShapeInt", "hsetnx": "ShapeBool", "hmset": "ShapeOK", "hgetall": "ShapeMap",
	"hmget": "ShapeNullStrings", "hdel": "ShapeInt", "hexists": "ShapeBool", "hlen": "ShapeInt",
	"hkeys": "ShapeStrings", "hvals": "ShapeStrings", "hincrby": "ShapeInt", "hincrbyfloat": "ShapeFloat",
	"hstrlen": "ShapeInt", "hscan": "ShapeScan", "hrandfield": "ShapeStringsOrMap",
	// lists
	"llen": "ShapeInt", "lpush": "ShapeInt", "rpush": "ShapeInt", "lpushx": "ShapeInt", "rpushx": "ShapeInt",
	"lpop": "ShapeStringsOrString", "rpop": "ShapeStringsOrString", "lrange": "ShapeStrings", "lindex": "ShapeString",
	"lset": "ShapeOK", "ltrim": "ShapeOK", "lrem": "ShapeInt", "linsert": "ShapeInt", "lpos": "ShapeIntOrNil",
	"lmove": "ShapeString", "rpoplpush": "ShapeString", "blmove": "ShapeString", "brpoplpush": "ShapeString",
	"blpop": "ShapePopped", "brpop": "ShapePopped",
	// sets
	"sadd": "ShapeInt", "srem": "ShapeInt", "scard": "ShapeInt", "smembers": "ShapeStrings", "sismember": "ShapeBool",
	"smismember": "ShapeBools", "spop": "ShapeStringsOrString", "srandmember": "ShapeStringsOrString",
	"sinter": "ShapeStrings", "sunion": "ShapeStrings", "sdiff": "ShapeStrings", "sinterstore": "ShapeInt",
	"sunionstore": "ShapeInt", "sdiffstore": "ShapeInt", "smove": "ShapeBool", "sscan": "ShapeScan", "sintercard": "ShapeInt",
	// sorted sets
	"zadd": "ShapeInt", "zcard": "ShapeInt", "zcount": "ShapeInt", "zlexcount": "ShapeInt", "zincrby": "ShapeFloat",
	"zscore": "ShapeFloatOrNil", "zmscore": "ShapeNullFloats", "zrank": "ShapeIntOrNil", "zrevrank": "ShapeIntOrNil",
	"zrem": "ShapeInt", "zrange": "ShapeStringsOrScored", "zrevrange": "ShapeStringsOrScored",
	"zrangebyscore": "ShapeStringsOrScored", "zrevrangebyscore": "ShapeStringsOrScored",
	"zrangebylex": "ShapeStrings", "zrevrangebylex": "ShapeStrings", "zrangestore": "ShapeInt",
	"zremrangebyrank": "ShapeInt", "zremrangebyscore": "ShapeInt", "zremrangebylex": "ShapeInt",
	"zpopmin": "ShapeScored", "zpopmax": "ShapeScored", "zscan": "ShapeScan",
	"zunion": "ShapeStringsOrScored", "zinter": "ShapeStringsOrScored", "zdiff": "ShapeStringsOrScored",
	"zunionstore": "ShapeInt", "zinterstore": "ShapeInt", "zdiffstore": "ShapeInt", "zintercard": "ShapeInt",
	"zrandmember": "ShapeStringsOrScored",
	// streams
	"xadd": "ShapeString", "xlen": "ShapeInt", "xdel": "ShapeInt", "xtrim": "ShapeInt", "xack": "ShapeInt",
	"xrange": "ShapeEntries", "xrevrange": "ShapeEntries", "xread": "ShapeStreams", "xreadgroup": "ShapeStreams",
	"xpending": "ShapePending", "xclaim": "ShapeEntries", "xgroup|create": "ShapeOK", "xgroup|destroy": "ShapeBool",
	"xgroup|createconsumer": "ShapeBool", "xgroup|delconsumer": "ShapeInt", "xgroup|setid": "ShapeOK",
	// hyperloglog, bitmaps, geo
	"pfadd": "ShapeBool", "pfcount": "ShapeInt", "pfmerge": "ShapeOK",
	"setbit": "ShapeInt", "getbit": "ShapeInt", "bitcount": "ShapeInt", "bitpos": "ShapeInt", "bitop": "ShapeInt",
	"geoadd": "ShapeInt", "geodist": "ShapeFloatOrNil", "geohash": "ShapeNullStrings",
	// scripting, pub/sub, connection, server
	"publish": "ShapeInt", "spublish": "ShapeInt", "pubsub|channels": "ShapeStrings", "pubsub|numpat": "ShapeInt",
	"pubsub|shardchannels": "ShapeStrings",
	"script|load":          "ShapeString", "script|exists": "ShapeBools", "script|flush": "ShapeOK", "function|delete": "ShapeOK",
	"ping": "ShapeStatus", "echo": "ShapeString", "select": "ShapeOK", "swapdb": "ShapeOK",
	"dbsize": "ShapeInt", "flushdb": "ShapeOK", "flushall": "ShapeOK", "lastsave": "ShapeInt",
	"info": "ShapeString", "time": "ShapeStrings", "client|id": "ShapeInt", "client|getname": "ShapeString",
	"client|setname": "ShapeOK", "client|list": "ShapeString", "client|info": "ShapeString", "multi": "ShapeOK",
	"watch": "ShapeOK", "unwatch": "ShapeOK", "discard": "ShapeOK", "wait": "ShapeInt", "config|set": "ShapeOK",
	"config|get": "ShapeMap", "memory|usage": "ShapeIntOrNil",
}

// replyShape returns the reply shape of a command, ShapeUnknown when the
// table has none.
func replyShape(name string) string {
	if s, ok := replies[name]; ok {
		return s
	}
	return "ShapeUnknown"
}

// replyDocs describe replies whose form an option changes, where the
// shape's own words do not say it.
var replyDocs = map[string]string{
	"zadd":     "Int (the members added, or changed with CH); with INCR, FloatOrNil (the new score, ok false when a condition refused it)",
	"zrank":    "IntOrNil (the rank, ok false for a missing member; with WITHSCORE it reads the rank of the pair)",
	"zrevrank": "IntOrNil (the rank, ok false for a missing member; with WITHSCORE it reads the rank of the pair)",
	"getex":    "String (the value, ok false for nil)",
	"lpos":     "IntOrNil without COUNT (ok false when not found); with COUNT, an array of positions (resp.Value)",
}
