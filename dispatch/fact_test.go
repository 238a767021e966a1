package dispatch

import (
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/resp"
)

// A call's Fact, made from its pieces (callFact), is the one the command
// table's inspector reads from the call's bytes (EVALSHA), and for the
// native command (not in the table) the same but for the keys, which
// callFact knows from numkeys: every key span views the key's bytes.
// Random numbers of keys (0 to 20, past the 8 kept inline) and sizes
// (headers of 1 to 4 digits).
func TestCallFactEqualsInspect(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	s := NewScript("enqueue", "return 1")
	for round := range 500 {
		var a Args
		var want []string
		nk, na := r.IntN(21), r.IntN(6)
		for i := range nk {
			k := "emq:{q}:" + strings.Repeat("k", r.IntN(1200)) + strconv.Itoa(i)
			want = append(want, k)
			if i%2 == 0 {
				a.Key(k)
			} else {
				a.KeyBytes([]byte(k))
			}
		}
		for range na {
			a.Arg(strings.Repeat("v", r.IntN(1500)))
		}
		var args *Args = &a
		if nk == 0 && na == 0 && round%2 == 0 {
			args = nil
		}
		for _, native := range []bool{false, true} {
			head := &s.evalsha
			if native {
				head = &s.nativeHead
			}
			var batch resp.Cmds
			aa := args
			if aa == nil {
				aa = &emptyArgs
			}
			h := appendCall(&batch, head, aa.nk, &aa.run)
			b := batch.Bytes()
			cmd, h2 := buildCall(nil, head, args)
			if string(cmd.Bytes()) != string(b) || h != h2 {
				t.Fatalf("buildCall and appendCall differ")
			}
			got, _ := callFact(s, native, args, h, nil)
			var l wire.Facts
			info := infoEvalsha
			if native {
				info = nil
			}
			if err := l.EncodedAs(info, b); err != nil {
				t.Fatal(err)
			}
			read := l.List()[0]
			if native {
				read.Keys = got.Keys // the table knows no EMQ.* keys
			}
			if !reflect.DeepEqual(got, read) {
				t.Fatalf("round %d native %t: made %+v, read %+v", round, native, got, read)
			}
			if len(got.Keys) != len(want) {
				t.Fatalf("round %d: %d keys, want %d", round, len(got.Keys), len(want))
			}
			for i, k := range want {
				if string(got.Key(b, i)) != k {
					t.Fatalf("round %d native %t: key %d = %.20q…, want %.20q…", round, native, i, got.Key(b, i), k)
				}
			}
			if string(got.Name.Of(b)) != map[bool]string{false: "EVALSHA", true: s.native}[native] {
				t.Fatalf("name %q", got.Name.Of(b))
			}
		}
	}
}
