package main

import (
	"fmt"
	"slices"
	"strings"
)

// durationUnit tells whether an argument is a duration and in which unit
// the server reads it. COMMAND DOCS gives only "integer" or "double": the
// unit comes from the argument's name and, for "timeout", from the
// command (the blocking list and sorted-set commands take seconds as a
// double, the others milliseconds).
func durationUnit(c *command, a *argument) (string, bool) {
	switch a.Type {
	case "integer", "double", "string":
	default:
		return "", false
	}
	switch a.Name {
	case "timeout":
		if a.Type == "double" {
			return "DecimalSeconds", true
		}
		if a.Type == "integer" {
			return "Milliseconds", true
		}
	case "seconds", "maxage":
		if a.Type == "integer" {
			return "Seconds", true
		}
	case "milliseconds", "ms", "min-idle-time":
		if a.Type != "double" {
			return "Milliseconds", true
		}
	}
	return "", false
}

// isTimeoutArg reports whether a bounds how long a blocking command
// waits: the timeout of BLPOP and its kin, WAIT and WAITAOF, and the
// BLOCK of XREAD and XREADGROUP.
func isTimeoutArg(c *command, a *argument) bool {
	if c == nil || !(c.Info.has("blocking") || c.Name == "wait" || c.Name == "waitaof") {
		return false
	}
	switch {
	case a.Name == "timeout":
		return true
	case a.Name == "milliseconds" && a.Token == "BLOCK":
		return true
	}
	return false
}

func timeoutUnit(c *command) (string, bool) {
	var unit string
	var walk func([]*argument)
	walk = func(args []*argument) {
		for _, a := range args {
			if isTimeoutArg(c, a) {
				unit, _ = durationUnit(c, a)
			}
			walk(a.Arguments)
		}
	}
	walk(c.Doc.Arguments)
	return unit, unit != ""
}

// replyModel are the commands after which the server replies otherwise on
// the connection: our own list, from what each command does.
var replyModel = map[string]bool{
	"subscribe": true, "psubscribe": true, "ssubscribe": true,
	"unsubscribe": true, "punsubscribe": true, "sunsubscribe": true,
	"monitor": true, "reset": true, "quit": true, "hello": true, "select": true,
	"auth": true, "sync": true, "psync": true, "client|reply": true, "script|debug": true,
	"replconf": true,
}

// kinds returns the Kind constants of a command.
func kinds(c *command) []string {
	var k []string
	in := c.Info
	if in.has("readonly") {
		k = append(k, "ReadOnly")
	}
	if in.has("write") {
		k = append(k, "Write")
	}
	if in.has("blocking") || c.Name == "wait" || c.Name == "waitaof" {
		k = append(k, "Blocking")
	}
	if replyModel[c.Name] {
		k = append(k, "ReplyModel")
	}
	if len(in.KeySpecs) == 0 {
		k = append(k, "NoKeys")
	}
	if in.has("movablekeys") {
		k = append(k, "MovableKeys")
	}
	if in.has("admin") {
		k = append(k, "Admin")
	}
	if in.has("pubsub") {
		k = append(k, "PubSub")
	}
	if nondeterministic(c) {
		k = append(k, "Nondeterministic")
	}
	switch c.Name {
	case "multi":
		k = append(k, "TxMulti")
	case "exec", "discard":
		k = append(k, "TxEnd")
	case "watch":
		k = append(k, "TxWatch")
	}
	return k
}

// nondeterministic reports whether a server tags the command's reply
// nondeterministic_output (TTL, RANDOMKEY, SRANDMEMBER, TIME): it may
// differ between two calls on the same data. The order-only tip
// (nondeterministic_output_order: HGETALL, SMEMBERS) does not count: the
// same data gives the same reply on one server.
func nondeterministic(c *command) bool {
	for _, srv := range c.Servers {
		if in := c.Infos[srv]; in != nil && slices.Contains(in.Tips, "nondeterministic_output") {
			return true
		}
	}
	return false
}

// leaveOut are the commands not generated, and why.
var leaveOut = map[string]string{
	"debug":    "the servers document none of DEBUG's arguments (COMMAND DOCS lists it without any)",
	"replconf": "internal to replication; the servers document none of its arguments",
	"sync":     "internal to replication: the connection becomes a replication stream",
	"psync":    "internal to replication: the connection becomes a replication stream",
}

// sampleOf is a sample value of a Go type, for the generated tests.
func sampleOf(typ string, a *argument, i int) string {
	switch typ {
	case "string":
		switch {
		case a.Type == "key":
			return fmt.Sprintf("%q", fmt.Sprintf("{k}%s%d", a.Name, i))
		case a.Name == "id" || strings.HasSuffix(a.Name, "-id") || a.Name == "start" || a.Name == "end" || a.Name == "lastid":
			return `"0-1"`
		case a.Name == "cursor":
			return `"0"`
		case a.Name == "rule":
			return `"on"`
		case a.Name == "command":
			return `"PING"`
		case a.Name == "min" || a.Name == "max":
			return `"1"`
		case a.Name == "stop":
			return `"2"`
		case a.Name == "metric":
			return `"key-count"`
		}
		return fmt.Sprintf("%q", "v"+a.Name)
	case "int64":
		return "1"
	case "float64":
		return "1.5"
	case "time.Duration":
		return "10 * time.Millisecond"
	case "time.Time":
		return "sampleTime"
	case "bool":
		return "true"
	}
	return "0"
}

// typeFixes correct argument types the servers' docs get wrong: ZINCRBY's
// increment is documented as an integer but is a double (the server
// parses it with strtod, and the reply is the new score); the SCAN
// family's cursor is documented as an integer but is an unsigned 64-bit
// number (above int64), passed back as the text the server sent
// (ScanPage.Cursor).
//
// The weights of ZINTER, ZINTERSTORE, ZUNION and ZUNIONSTORE are
// documented as integers but are doubles too.
var typeFixes = map[string]string{
	"zincrby/increment": "double",
	"zinter/weight":     "double", "zinterstore/weight": "double", "zunion/weight": "double", "zunionstore/weight": "double",
	"scan/cursor": "string", "hscan/cursor": "string", "sscan/cursor": "string", "zscan/cursor": "string",
}

// fixTypes applies typeFixes to a command's arguments.
func fixTypes(c *command) {
	for _, a := range c.Doc.Arguments {
		if t, ok := typeFixes[c.Name+"/"+a.Name]; ok {
			a.Type = t
		}
	}
}

// nameFixes rename the method of an optional block, or of an
// alternative of a choice, whose server name says nothing (HELLO's
// "arguments" is the protocol version and its options) or reads badly.
var nameFixes = map[string]string{
	"hello/arguments": "Protocol",
	// CLUSTER SLOT-STATS's alternatives, read as two words.
	"cluster|slot-stats/slotsrange": "SlotsRange",
	"cluster|slot-stats/orderby":    "OrderBy",
}

// everyShard are the node-wide admin commands a cluster sends to every
// primary though a server's table may give them no request policy: Redis
// 7.0 leaves CONFIG RESETSTAT and CONFIG REWRITE untagged (Valkey 8.0 tags
// them all_nodes). The cluster router applied this list to the table it
// read at connect; it is a fact of the command, so it is applied here, at
// build: each gets AllShards with the first reply where no table tags it.
// With both servers' tips merged (policyOf) no command of these tables
// needs it; it stays the floor for a table that tags fewer.
var everyShard = []string{
	"config|resetstat", "config|set", "config|rewrite", "script|flush",
	"flushall", "flushdb", "function|load", "function|delete", "function|flush", "function|restore",
}

// keysProcs are the commands whose keys the servers find with code of
// their own (a getkeys_proc) because their key specs fall short: SORT's
// STORE destination is an "unknown" spec (the keyword may be anywhere,
// and a BY or GET pattern may be spelled "store"), MIGRATE's KEYS spec is
// "incomplete" (with KEYS the key argument is "" and not a key). The
// generated Info names the finder (package cmds, keyspec.go), which
// follows the servers' sortGetKeys and migrateGetKeys.
var keysProcs = map[string]string{"sort": "procSort", "migrate": "procMigrate"}

// unknownSpecs are the commands allowed key specs of type "unknown": the
// BY and GET patterns of SORT and SORT_RO (key names read from the data,
// which COMMAND GETKEYS does not report either) and SORT's STORE, found
// by procSort. A new one in a server's table stops the generator, so
// that it is looked at.
var unknownSpecs = map[string]bool{"sort": true, "sort_ro": true}
