package dispatch_test

import (
	"strings"
	"testing"

	"github.com/echomq/echomq-go/dispatch"
	"github.com/echomq/echomq-go/resp"
)

func TestScript(t *testing.T) {
	s := dispatch.NewScript("claim_batch", "return 1")
	if got, want := s.SHA(), "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"; got != want {
		t.Fatalf("SHA = %s, want %s", got, want)
	}
	if s.Name() != "claim_batch" || s.Source() != "return 1" {
		t.Fatalf("Name %q Source %q", s.Name(), s.Source())
	}
	if got := s.NativeCommand(); got != "EMQ.CLAIM_BATCH" {
		t.Fatalf("NativeCommand = %q", got)
	}
	if got := s.String(); got != "claim_batch@e0e1f9fa" {
		t.Fatalf("String = %q", got)
	}
}

func TestArgs(t *testing.T) {
	var a dispatch.Args
	for range 2 { // the second round proves Reset
		a.Reset()
		a.Key("emq:{q}:job:JOB0KHTOWnGLuC")
		a.KeyBytes([]byte("emq:{q}:pending"))
		a.Arg("JOB0KHTOWnGLuC")
		a.ArgBytes([]byte("pay\r\nload"))
		a.ArgInt(-42)
		a.ArgInt(7)
		if a.NumKeys() != 2 || a.NumArgs() != 4 {
			t.Fatalf("NumKeys %d NumArgs %d", a.NumKeys(), a.NumArgs())
		}
	}
}

func TestArgsKeyAfterArgPanics(t *testing.T) {
	for _, add := range []func(*dispatch.Args){
		func(a *dispatch.Args) { a.Key("k") },
		func(a *dispatch.Args) { a.KeyBytes([]byte("k")) },
	} {
		func() {
			defer func() {
				r := recover()
				msg, _ := r.(string)
				if !strings.Contains(msg, "before the first argument") {
					t.Fatalf("recover() = %v, want a panic about key order", r)
				}
			}()
			var a dispatch.Args
			a.Key("k0")
			a.Arg("x")
			add(&a)
		}()
	}
	var a dispatch.Args
	a.Arg("x")
	a.Reset()
	a.Key("k") // fine after Reset
}

func TestArgsAllocs(t *testing.T) {
	var a dispatch.Args
	id := []byte("JOB0KHTOWnGLuC")
	fill := func() {
		a.Reset()
		a.Key("emq:{bench}:job:JOB0KHTOWnGLuC")
		a.Key("emq:{bench}:pending")
		a.ArgBytes(id)
		a.ArgInt(1234567)
	}
	fill()
	if n := testing.AllocsPerRun(100, fill); n != 0 {
		t.Fatalf("Args: %v allocs per call, want 0", n)
	}
}

// wantCommand is the reference encoding of a command.
func wantCommand(args ...string) string { return string(resp.AppendCommand(nil, args...)) }
