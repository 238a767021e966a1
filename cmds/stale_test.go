package cmds

import (
	"errors"
	"testing"
)

// TestStaleCommand: a Command used after its Builder started the next
// command is refused (Err matches ErrStale, Cmd is the zero resp.Cmd,
// which a connection refuses) and names nothing, instead of showing the
// bytes and keys of the command built since; the one built last is
// whole.
func TestStaleCommand(t *testing.T) {
	var b Builder
	first := b.Get("first").Build()
	if err := first.Err(); err != nil || first.Keys() != 1 {
		t.Fatalf("GET first: %v, %d keys", err, first.Keys())
	}
	last := b.Set("second", "v").Build()
	if err := first.Err(); !errors.Is(err, ErrStale) {
		t.Errorf("stale Err = %v, want ErrStale", err)
	}
	if n := len(first.Cmd().Bytes()); n != 0 || first.Cmd().Err() == nil {
		t.Errorf("stale Cmd: %d bytes, Err %v; want the zero Cmd", n, first.Cmd().Err())
	}
	if first.Keys() != 0 || first.Args() != 0 || first.Name() != "" || first.Info() != nil || first.Kind() != 0 {
		t.Errorf("stale command names %d keys, %d args, name %q, kind %v", first.Keys(), first.Args(), first.Name(), first.Kind())
	}
	if _, has, _ := first.Slot(); has {
		t.Error("stale command has a slot")
	}
	if got := encoded(t, last); got != "SET second v" || last.Name() != "set" || string(last.Key(0)) != "second" {
		t.Errorf("last = %s (%s, key %q)", got, last.Name(), last.Key(0))
	}
	// The zero Command is a command of no arguments, as before.
	var zero Command
	if err := zero.Err(); err == nil || errors.Is(err, ErrStale) || zero.Keys() != 0 {
		t.Errorf("zero Command: Err %v, %d keys", err, zero.Keys())
	}
}
