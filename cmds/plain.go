package cmds

// Plain commands: the one-load test by name that lets an encoder tell a
// connection its submission needs no guard, without looking each name up
// (see Plain).

// Guarded are the kinds a connection shared by callers must look at
// before it sends a command (conn's guard, a Client's choice of
// connection): a command of none of them is plain.
const Guarded = Blocking | ReplyModel | TxMulti | TxEnd | TxWatch

// shaped has bit l of shaped[letter] set when some command whose name has
// that first letter and l bytes may be Guarded (with some arguments, or
// one of its subcommands), or is SYNC, PSYNC or REPLCONF (left out of the
// table, ReplyModel all the same).
var shaped [27]uint32

func init() {
	for _, in := range commands {
		if in.Kind&Guarded != 0 {
			shape(in.Words[0])
		}
	}
	shape("SYNC")
	shape("PSYNC")
	shape("REPLCONF")
}

func shape(w string) {
	if len(w) <= maxIndexed {
		shaped[letter(w[0])] |= 1 << len(w)
	}
}

// Plain reports whether a command named name (its first argument, in any
// case) is plain whatever its arguments: not of a Guarded kind, and so
// sent by a shared connection without its Fact. It is a test of the
// name's first letter and length, which costs one load: it may say false
// of a plain command (SINTER shares its shape with SELECT), never true of
// one that is not. An empty name is not plain.
func Plain[S ~string | ~[]byte](name S) bool {
	n := len(name)
	if n == 0 {
		return false
	}
	if n > maxIndexed {
		return true // not in the table: a module's, or a typo
	}
	return shaped[letter(name[0])]&(1<<n) == 0
}
