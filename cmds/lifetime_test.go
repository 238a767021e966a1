package cmds

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/resp"
)

// sendRaw writes the encoded commands in one write on a connection of
// its own and reads one reply per command.
func sendRaw(t *testing.T, n int, enc ...[]byte) []resp.Value {
	t.Helper()
	r := dialRaw(t, 2)
	var all []byte
	for _, e := range enc {
		all = append(all, e...)
	}
	out := make([]resp.Value, n)
	for i := range n {
		var err error
		if i == 0 {
			out[i], err = r.do(all)
		} else {
			out[i], err = r.next()
		}
		if err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
	}
	return out
}

// TestBuiltCommandImmutable (issue 23, finding 1): an option given to a
// builder value after its Build is refused and leaves the built Command
// as it was; before, SET … EX 5 became "…$3\r\n600" without its CRLF,
// with a nil Err, and the server read the next command's bytes as the
// rest of it ("ERR unknown command '$3'").
func TestBuiltCommandImmutable(t *testing.T) {
	servertest.Need(t, srv)
	srv.Flush(t)
	var b Builder
	s := b.Set("imm:k", "v")
	c1 := s.Ex(5 * time.Second).Build()
	enc := string(c1.Cmd().Bytes())
	if got := c1.String(); got != "SET imm:k v EX 5" {
		t.Fatalf("built %s", got)
	}
	s.Ex(600 * time.Second) // after Build: refused
	s.Get().Nx()
	if err := c1.Err(); err != nil {
		t.Fatalf("built command: %v", err)
	}
	if got := string(c1.Cmd().Bytes()); got != enc {
		t.Fatalf("built command changed: %q, was %q", got, enc)
	}
	if late := s.Ex(600 * time.Second).Build(); !errors.Is(late.Err(), ErrStale) || len(late.Cmd().Bytes()) != 0 {
		t.Errorf("an option after Build, built: Err %v, %d bytes; want ErrStale and none", late.Err(), len(late.Cmd().Bytes()))
	}
	// Build again, with no refused option: the same command.
	if again := s.Build(); again.Err() != nil || string(again.Cmd().Bytes()) != enc {
		t.Errorf("Build again: %v %q", again.Err(), again.Cmd().Bytes())
	}
	if got := string(c1.Cmd().Bytes()); got != enc || c1.Err() != nil {
		t.Fatalf("built command changed: %q, was %q (%v)", got, enc, c1.Err())
	}
	// On the server, followed in the same write by another command.
	var g, h Builder // a Command views its Builder's memory: one each
	v := sendRaw(t, 3, c1.Cmd().Bytes(), g.Get("imm:k").Build().Cmd().Bytes(), h.Ttl("imm:k").Build().Cmd().Bytes())
	if !v[0].Equal("OK") || v[1].Text() != "v" {
		t.Fatalf("SET then GET read %v, %v", v[0], v[1])
	}
	if ttl, err := v[2].AsInt(); err != nil || ttl <= 0 || ttl > 5 {
		t.Errorf("TTL %v (%v), want 1..5: the EX of the built command", v[2], err)
	}
}

// TestStaleBuilderValueRefused (issue 23, finding 2): an option on a
// builder value whose Builder has started another command is refused
// and touches nothing else; before, set.Get() after b.Del made the DEL
// delete a key named "GET", and set.Nx().Build() gave a Command named
// del carrying SET's error, which the built DEL then carried too.
func TestStaleBuilderValueRefused(t *testing.T) {
	servertest.Need(t, srv)
	srv.Flush(t)
	if _, err := srv.Do("MSET", "GET", "keep", "adv:tmp", "x"); err != nil {
		t.Fatal(err)
	}
	var b Builder
	set := b.Set("adv:k", "v")
	del := b.Del("adv:tmp")
	set.Get() // stale: refused
	d := del.Build()
	if got := d.String(); got != "DEL adv:tmp" || d.Err() != nil {
		t.Fatalf("DEL built as %s (%v)", got, d.Err())
	}
	enc := string(d.Cmd().Bytes())
	n := set.Nx().Build()
	if !errors.Is(n.Err(), ErrStale) || n.Name() != "" || len(n.Cmd().Bytes()) != 0 {
		t.Errorf("stale SET built: Err %v, name %q, %d bytes; want ErrStale, nothing", n.Err(), n.Name(), len(n.Cmd().Bytes()))
	}
	if s := set.Build(); !errors.Is(s.Err(), ErrStale) {
		t.Errorf("stale SET value built: %v, want ErrStale", s.Err())
	}
	if d.Err() != nil || string(d.Cmd().Bytes()) != enc || d.Name() != "del" {
		t.Fatalf("the built DEL changed: %v %q %q", d.Err(), d.Cmd().Bytes(), d.Name())
	}
	v := sendRaw(t, 1, d.Cmd().Bytes())
	if n, err := v[0].AsInt(); err != nil || n != 1 {
		t.Fatalf("DEL: %v %v", v[0], err)
	}
	for k, want := range map[string]string{"GET": "keep", "adv:k": "", "adv:tmp": ""} {
		if got, err := srv.Do("GET", k); err != nil || got != want {
			t.Errorf("GET %s = %q (%v), want %q", k, got, err, want)
		}
	}
}

// TestGenerationsDoNotWrap (issue 23, finding 13): a Command kept while
// its Builder builds 2^32 more commands is stale; before, the 32-bit
// generation wrapped and the kept GET had a nil Err and the bytes of
// the command built last. The same for a builder value.
func TestGenerationsDoNotWrap(t *testing.T) {
	var b Builder
	kept := b.Get("wrap:kept").Build()
	advanceBuilds(&b, 1<<32-1)
	last := b.Set("wrap:last", "x").Build()
	if err := kept.Err(); !errors.Is(err, ErrStale) || len(kept.Cmd().Bytes()) != 0 || kept.Name() != "" {
		t.Errorf("kept GET after 2^32 builds: Err %v, %s", err, kept)
	}
	if last.String() != "SET wrap:last x" {
		t.Errorf("last = %s", last)
	}
	val := b.Set("wrap:v", "x")
	advanceBuilds(&b, 1<<32-1)
	get := b.Get("wrap:other")
	if c := val.Nx().Build(); !errors.Is(c.Err(), ErrStale) {
		t.Errorf("builder value after 2^32 builds: %s, %v", c, c.Err())
	}
	if c := get.Build(); c.String() != "GET wrap:other" {
		t.Errorf("GET = %s", c)
	}
}

// TestEveryOptionRefusedWhenStale: for every builder the generator
// writes, every option given after Build, or after the Builder started
// another command, is refused: the built Command, or the other command,
// keeps its bytes and its Err, and a Command built of the refused value
// matches ErrStale. The options are called with zero arguments (the
// zero choice, no values), which a live value would take.
func TestEveryOptionRefusedWhenStale(t *testing.T) {
	bt := reflect.TypeOf(&Builder{})
	cmdT := reflect.TypeOf(Command{})
	options := 0
	for m := range bt.Methods() {
		if m.Type.NumOut() != 1 || m.Type.Out(0).Kind() != reflect.Struct {
			continue
		}
		vt := m.Type.Out(0)
		build, ok := vt.MethodByName("Build")
		if !ok || build.Type.NumOut() != 1 || build.Type.Out(0) != cmdT {
			continue
		}
		var b Builder
		start := func() reflect.Value { return callZero(m.Func, reflect.ValueOf(&b)) }
		for o := range vt.Methods() {
			if o.Name == "Build" {
				continue
			}
			options++
			// After Build.
			v := start()
			c := callZero(build.Func, v).Interface().(Command)
			enc, err := string(c.Cmd().Bytes()), fmt.Sprint(c.Err())
			r := callZero(o.Func, v)
			if got := string(c.Cmd().Bytes()); got != enc || fmt.Sprint(c.Err()) != err {
				t.Errorf("%s.%s after Build changed the Command: %q (%s), was %q (%s)", vt.Name(), o.Name, got, c.Err(), enc, err)
			}
			if rc := callZero(build.Func, r).Interface().(Command); !errors.Is(rc.Err(), ErrStale) {
				t.Errorf("%s.%s after Build, built: %v, want ErrStale", vt.Name(), o.Name, rc.Err())
			}
			// After the Builder started another command.
			v = start()
			other := b.Get("other")
			callZero(o.Func, v)
			if oc := other.Build(); oc.String() != "GET other" {
				t.Errorf("%s.%s on a stale value: the next command is %s", vt.Name(), o.Name, oc)
			}
		}
	}
	if options < 300 { // 343 at 67ebe62
		t.Fatalf("only %d options found", options)
	}
}

// callZero calls fn with recv and zero values for the other parameters
// (none for a variadic one).
func callZero(fn reflect.Value, recv reflect.Value) reflect.Value {
	ft := fn.Type()
	in := []reflect.Value{recv}
	n := ft.NumIn()
	if ft.IsVariadic() {
		n--
	}
	for i := 1; i < n; i++ {
		in = append(in, reflect.Zero(ft.In(i)))
	}
	return fn.Call(in)[0]
}
