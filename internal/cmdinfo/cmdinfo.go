// Package cmdinfo tells how a command uses its connection: whether it
// changes the connection's reply model (the subscribe family, MONITOR,
// CLIENT REPLY OFF, RESET, …), blocks on the server (BLPOP, XREAD …
// BLOCK, WAIT, …) and for how long, or opens a transaction. Package resp
// marks a command Special while it is encoded (Special is a cheap test of
// the name); a connection Inspects only the commands so marked.
package cmdinfo

import (
	"errors"
	"math"
	"strconv"
	"time"
)

// Kind is what a command does to its connection.
type Kind uint8

// The kinds.
const (
	// Plain commands get exactly one reply and do not block.
	Plain Kind = iota
	// ReplyModel commands change how the server replies on the
	// connection (subscriber mode, MONITOR's feed, no replies at all, a
	// reset of the handshake, the connection's end): a pipelined
	// connection shared by callers cannot carry them.
	ReplyModel
	// Blocking commands may wait on the server for Info.Timeout (0: for
	// ever) before their reply.
	Blocking
	// Multi opens a transaction: the commands after it on the
	// connection are queued until EXEC or DISCARD.
	Multi
	// EndTx closes a transaction (EXEC, DISCARD).
	EndTx
	// Watch (WATCH) makes a later EXEC on the connection depend on keys.
	Watch
)

// Info describes one command.
type Info struct {
	Kind Kind
	// Name is the command's name in upper case, with its subcommand when
	// that decides the kind ("CLIENT REPLY").
	Name string
	// Timeout is a Blocking command's own timeout; 0 means none (it may
	// wait for ever).
	Timeout time.Duration
}

// maxName is the longest special name (PUNSUBSCRIBE, SUNSUBSCRIBE).
const maxName = 12

// kinds maps every special name to its kind; CLIENT, XREAD and
// XREADGROUP depend on their arguments.
var kinds = map[string]Kind{
	"SUBSCRIBE": ReplyModel, "PSUBSCRIBE": ReplyModel, "SSUBSCRIBE": ReplyModel,
	"UNSUBSCRIBE": ReplyModel, "PUNSUBSCRIBE": ReplyModel, "SUNSUBSCRIBE": ReplyModel,
	"MONITOR": ReplyModel, "RESET": ReplyModel, "QUIT": ReplyModel,
	"HELLO": ReplyModel, "SELECT": ReplyModel, "AUTH": ReplyModel,
	"SYNC": ReplyModel, "PSYNC": ReplyModel,
	"BLPOP": Blocking, "BRPOP": Blocking, "BRPOPLPUSH": Blocking, "BLMOVE": Blocking,
	"BLMPOP": Blocking, "BZPOPMIN": Blocking, "BZPOPMAX": Blocking, "BZMPOP": Blocking,
	"WAIT": Blocking, "WAITAOF": Blocking,
	"MULTI": Multi, "EXEC": EndTx, "DISCARD": EndTx, "WATCH": Watch,
	"CLIENT": Plain, "XREAD": Plain, "XREADGROUP": Plain,
}

// shapes has, for each first letter (either case), bit n set when a
// special name of length n starts with it: most commands (PING, GET,
// EVALSHA, ...) are told apart by one table look-up, without comparing
// names.
var shapes = func() (t [256]uint16) {
	for name := range kinds {
		t[name[0]] |= 1 << len(name)
		t[name[0]+'a'-'A'] |= 1 << len(name)
	}
	return t
}()

// Special reports whether a command of this name needs Inspect before a
// pipelined connection sends it. It allocates nothing, and most names
// (PING, GET, SET, EVALSHA, …) are told apart by their length and first
// letter alone, in a check small enough to inline.
func Special(name string) bool {
	n := uint(len(name))
	return n != 0 && n <= maxName && shapes[name[0]]>>n&1 != 0 && special(name)
}

// Maybe is Special's first look, small enough to inline at a call site:
// false means the name is not special; true, that Special must look.
func Maybe(name string) bool {
	n := uint(len(name))
	return n != 0 && n <= maxName && shapes[name[0]]>>n&1 != 0
}

// MaybeBytes is Maybe for a name given as bytes.
func MaybeBytes(name []byte) bool {
	n := uint(len(name))
	return n != 0 && n <= maxName && shapes[name[0]]>>n&1 != 0
}

// SpecialBytes is Special for a name given as bytes.
func SpecialBytes(name []byte) bool {
	n := uint(len(name))
	return n != 0 && n <= maxName && shapes[name[0]]>>n&1 != 0 && special(string(name))
}

// special compares a name that passed the quick check with the special
// names, in upper case.
func special(name string) bool {
	n := len(name)
	var up [maxName]byte
	for i := 0; i < n; i++ {
		c := name[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		up[i] = c
	}
	switch string(up[:n]) {
	case "SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE", "UNSUBSCRIBE", "PUNSUBSCRIBE", "SUNSUBSCRIBE",
		"MONITOR", "RESET", "QUIT", "HELLO", "SELECT", "AUTH", "SYNC", "PSYNC",
		"BLPOP", "BRPOP", "BRPOPLPUSH", "BLMOVE", "BLMPOP", "BZPOPMIN", "BZPOPMAX", "BZMPOP",
		"WAIT", "WAITAOF", "MULTI", "EXEC", "DISCARD", "WATCH", "CLIENT", "XREAD", "XREADGROUP":
		return true
	}
	return false
}

// ErrMalformed is returned by Inspect for bytes that are not one command
// encoded as an array of bulk strings.
var ErrMalformed = errors.New("cmdinfo: not an encoded command")

// Inspect describes the command encoded at the start of b (an array of
// bulk strings, as package resp encodes commands) and returns its length
// in bytes.
func Inspect(b []byte) (Info, int, error) {
	args, n, err := split(b, nil)
	if err != nil || len(args) == 0 {
		return Info{}, 0, ErrMalformed
	}
	name := upper(args[0])
	info := Info{Kind: kinds[name], Name: name}
	switch name {
	case "CLIENT":
		if len(args) >= 3 && upper(args[1]) == "REPLY" {
			if m := upper(args[2]); m == "OFF" || m == "SKIP" {
				info = Info{Kind: ReplyModel, Name: "CLIENT REPLY"}
			}
		}
	case "XREAD", "XREADGROUP":
		for i := 1; i+1 < len(args); i++ {
			a := upper(args[i])
			if a == "STREAMS" {
				break
			}
			if a == "BLOCK" {
				info.Kind, info.Timeout = Blocking, millis(args[i+1])
				break
			}
		}
	case "BLPOP", "BRPOP", "BRPOPLPUSH", "BLMOVE", "BZPOPMIN", "BZPOPMAX":
		info.Timeout = seconds(args[len(args)-1])
	case "BLMPOP", "BZMPOP":
		if len(args) > 1 {
			info.Timeout = seconds(args[1])
		}
	case "WAIT", "WAITAOF":
		info.Timeout = millis(args[len(args)-1])
	}
	return info, n, nil
}

// Each calls fn with the Info of every command encoded back to back in b.
func Each(b []byte, fn func(Info) error) error {
	for len(b) > 0 {
		info, n, err := Inspect(b)
		if err != nil {
			return err
		}
		if err := fn(info); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// split reads one array of bulk strings from the start of b.
func split(b []byte, args [][]byte) ([][]byte, int, error) {
	n, i, ok := header(b, 0, '*')
	if !ok {
		return nil, 0, ErrMalformed
	}
	for range n {
		l, j, ok := header(b, i, '$')
		if !ok || l > len(b)-j-2 || b[j+l] != '\r' || b[j+l+1] != '\n' {
			return nil, 0, ErrMalformed
		}
		args = append(args, b[j:j+l])
		i = j + l + 2
	}
	return args, i, nil
}

// header reads "<t><n>\r\n" at b[i:], returning n and where it ends.
func header(b []byte, i int, t byte) (n, end int, ok bool) {
	if i >= len(b) || b[i] != t {
		return 0, 0, false
	}
	i++
	start := i
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		if n > math.MaxInt32 {
			return 0, 0, false
		}
		n = n*10 + int(b[i]-'0')
	}
	if i == start || i+1 >= len(b) || b[i] != '\r' || b[i+1] != '\n' {
		return 0, 0, false
	}
	return n, i + 2, true
}

func upper(b []byte) string {
	u := []byte(string(b))
	for i, c := range u {
		if 'a' <= c && c <= 'z' {
			u[i] = c - ('a' - 'A')
		}
	}
	return string(u)
}

// seconds reads a timeout in seconds (a decimal, maybe fractional); a
// text the server would refuse counts as no timeout, which is the safe
// side: the server answers it with an error at once.
func seconds(b []byte) time.Duration {
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || f <= 0 || f > math.MaxInt64/float64(time.Second) {
		return 0
	}
	return time.Duration(f * float64(time.Second))
}

// millis reads a timeout in milliseconds.
func millis(b []byte) time.Duration {
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64/int64(time.Millisecond) {
		return 0
	}
	return time.Duration(n) * time.Millisecond
}
