package cmds

// Where a command's keys are in its raw arguments, and how a cluster
// sends it: the servers' key specs and request/response policy tips,
// carried as data in each generated Info (cmdgen writes them from
// COMMAND INFO), so that a command given as raw arguments (Do) is routed
// from the same table the builders come from, with no table read from
// the server at run time.

// keySpec is one of a command's key specs (COMMAND INFO's key_specs):
// where its keys begin (begin_search) and how they are found from there
// (find_keys).
type keySpec struct {
	// begin_search: by index (index > 0: the first key is argument
	// index), or by keyword (keyword != "": the first key follows the
	// keyword, searched from argument from on; from negative: from the
	// from-th last argument backwards).
	index   int8
	from    int8
	keyword string
	// find_keys: by range (the last key is lastKey after the first or,
	// negative, counted from the end; with a limit, among the first
	// 1/limit of the arguments left) or by keynum (the number of keys is
	// the argument numIdx after where the spec begins, and the keys
	// begin firstKey after where it begins); a key every step arguments.
	keynum   bool
	lastKey  int8 // range: lastkey
	limit    int8 // range: limit
	numIdx   int8 // keynum: keynumidx
	firstKey int8 // keynum: firstkey
	step     int8 // range or keynum: keystep (0 stands for 1)
	// notKey: the spec's arguments are not keys (SPUBLISH's shard
	// channel): COMMAND GETKEYS leaves them out, a cluster routes by them.
	notKey bool
}

// keysProc names the code of its own a server runs to find the keys of
// a command whose key specs are incomplete or unknown.
type keysProc uint8

const (
	procNone    keysProc = iota
	procSort             // SORT: the key, and the destination after the last STORE
	procMigrate          // MIGRATE: the key, or the keys after KEYS when the key is ""
)

// Policy says where a cluster sends a command that names no key: from
// the servers' request_policy tips (and, for a few node-wide admin
// commands that Redis 7.0 leaves untagged, cmdgen's own list).
type Policy uint8

// The policies.
const (
	// ByKeys: the node serving the keys' slot; any node when the
	// command names none.
	ByKeys Policy = iota
	// AllShards: every primary (request_policy all_shards or
	// all_nodes: a cluster client reaches the primaries), when sent
	// alone; its replies become one as its Aggregate says.
	AllShards
)

// Aggregate says how the replies of a command sent to every primary
// become one (response_policy).
type Aggregate uint8

// The aggregates.
const (
	// AggFirst: the first primary's reply (all_succeeded,
	// one_succeeded, special, or none given with a request policy
	// other than all_shards).
	AggFirst Aggregate = iota
	// AggSum: the sum of the integer replies (agg_sum).
	AggSum
	// AggLogicalAnd: the logical and of integer replies, or of arrays
	// of them element by element (agg_logical_and).
	AggLogicalAnd
	// AggLogicalOr: the logical or (agg_logical_or).
	AggLogicalOr
	// AggMin: the smallest integer reply (agg_min).
	AggMin
	// AggMax: the largest integer reply (agg_max).
	AggMax
	// AggConcat: the array replies concatenated (all_shards with no
	// response policy: KEYS).
	AggConcat
)

// Policy returns where a cluster sends the command when it names no key.
func (in *Info) Policy() Policy { return in.policy }

// OneKey reports whether a command of this Info given n arguments (its
// name and subcommand included) names exactly one key, argument
// len(Words): GET k, HGET k f, EXISTS k (not EXISTS a b), XINFO STREAM k;
// not a command whose keys follow a keyword or a count, nor one whose
// keys move with its arguments (MovableKeys: SORT_RO … BY reads keys of
// its patterns), nor one with a key finder of its own (SORT, MIGRATE).
func (in *Info) OneKey(n int) bool {
	if in == nil || len(in.keys) != 1 || in.proc != 0 || in.Kind&MovableKeys != 0 || n <= len(in.Words) {
		return false
	}
	k := in.keys[0]
	if k.keyword != "" || k.keynum || k.notKey || int(k.index) != len(in.Words) {
		return false
	}
	switch {
	case k.lastKey == 0:
		return true
	case k.lastKey == -1 && k.limit <= 1:
		return n == len(in.Words)+1 // a key to the end: only one given
	}
	return false
}

// Aggregate returns how the replies of the command sent to every primary
// become one.
func (in *Info) Aggregate() Aggregate { return in.agg }

// AppendRouteKeys appends to dst the index of every argument of the
// command in args (args[0] is the name, a subcommand args[1]) whose slot
// routes it in a cluster: its keys, as COMMAND GETKEYS finds them, and
// its shard channels (SPUBLISH's), which are not keys but are routed like
// them. A spec whose arguments are not there (a count that is not a
// number, a keyword missing) finds nothing; nothing is read out of args.
func (in *Info) AppendRouteKeys(args [][]byte, dst []int32) []int32 {
	return in.appendKeys(args, dst, true)
}

// findKeys appends to dst the index of every key of the command in args
// (args[0] is the name, a subcommand args[1]), as the key specs find them
// and COMMAND GETKEYS reports them: by numkeys, after a keyword searched
// forwards or backwards, by ranges (a negative last key counts from the
// end; step; limit), and for SORT and MIGRATE as the servers' own code
// does. Shard channels are not keys.
func (in *Info) findKeys(args [][]byte, dst []int32) []int32 {
	return in.appendKeys(args, dst, false)
}

func (in *Info) appendKeys(args [][]byte, dst []int32, chans bool) []int32 {
	argc := len(args)
	switch in.proc {
	case procSort:
		return sortKeys(args, dst)
	case procMigrate:
		return migrateKeys(args, dst)
	}
	for i := range in.keys {
		s := &in.keys[i]
		if s.notKey && !chans {
			continue
		}
		first := int(s.index)
		if s.keyword != "" {
			first = findKeyword(args, s.keyword, int(s.from))
		}
		if first <= 0 || first >= argc {
			continue
		}
		step := max(int(s.step), 1)
		var last int
		if s.keynum {
			idx := first + int(s.numIdx)
			if idx >= argc {
				continue
			}
			n := atoi(args[idx])
			if n < 0 {
				continue
			}
			first += int(s.firstKey)
			last = first + n - 1
		} else {
			switch {
			case s.lastKey >= 0:
				last = first + int(s.lastKey)
			case s.limit == 0:
				last = argc + int(s.lastKey)
			default:
				last = first + (argc-first)/int(s.limit) + int(s.lastKey)
			}
		}
		// As the servers: keys past the arguments are a syntax error,
		// which finds none of this spec's.
		if last >= argc || last < first || first >= argc {
			continue
		}
		for k := first; k <= last; k += step {
			dst = append(dst, int32(k))
		}
	}
	return dst
}

// findKeyword returns the index after the keyword, searched from
// argument from (from the from-th last backwards when negative), as the
// servers search it: not at the search's last argument (forwards, the
// command's last; backwards, its first after the name). 0: not found.
func findKeyword(args [][]byte, kw string, from int) int {
	argc := len(args)
	start, end := from, argc-1
	if from <= 0 {
		start, end = argc+from, 1
	}
	for i := start; i != end; {
		if i >= argc || i < 1 {
			break
		}
		if equalFold(args[i], kw) {
			return i + 1
		}
		if start <= end {
			i++
		} else {
			i--
		}
	}
	return 0
}

// sortKeys: SORT key [BY p] [LIMIT o c] [GET p …] [ASC|DESC] [ALPHA]
// [STORE dst]: the key, and the destination of the last STORE (the
// servers' sortGetKeys: LIMIT's two arguments and BY's and GET's one are
// skipped, so a pattern spelled "store" is not taken for the keyword).
func sortKeys(args [][]byte, dst []int32) []int32 {
	if len(args) < 2 {
		return dst
	}
	dst = append(dst, 1)
	store := -1
	for i := 2; i < len(args); i++ {
		switch {
		case equalFold(args[i], "LIMIT"):
			i += 2
		case equalFold(args[i], "GET"), equalFold(args[i], "BY"):
			i++
		case equalFold(args[i], "STORE") && i+1 < len(args):
			store = i + 1
		}
	}
	if store > 0 {
		dst = append(dst, int32(store))
	}
	return dst
}

// migrateKeys: MIGRATE host port key|"" db timeout [COPY] [REPLACE]
// [AUTH pw | AUTH2 user pw] [KEYS key …]: the key, or, with KEYS (the key
// then ""), the keys after it (the servers' migrateGetKeys).
func migrateKeys(args [][]byte, dst []int32) []int32 {
	argc := len(args)
	first, num := 3, 1
	for i := 6; i < argc; i++ {
		if equalFold(args[i], "KEYS") {
			if len(args[3]) > 0 {
				return dst // the servers' syntax error: both a key and KEYS
			}
			first, num = i+1, argc-i-1
			break
		}
		switch {
		case equalFold(args[i], "AUTH"):
			i++
		case equalFold(args[i], "AUTH2"):
			i += 2
		}
	}
	for k := first; k < first+num && k < argc; k++ {
		dst = append(dst, int32(k))
	}
	return dst
}

// atoi reads a non-negative decimal count, or -1.
func atoi(b []byte) int {
	if len(b) == 0 || len(b) > 9 {
		return -1
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	return n
}
