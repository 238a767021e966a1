package jobs

import "testing"

// TestUniqueKey: the same type and fields give the same key; any other
// split of the same bytes, another type or another order, another key.
func TestUniqueKey(t *testing.T) {
	a := UniqueKey("email:send", "bob@example.com", "welcome")
	if a != UniqueKey("email:send", "bob@example.com", "welcome") {
		t.Fatal("not deterministic")
	}
	for _, other := range []string{
		UniqueKey("email:send", "bob@example.comwelcome"),
		UniqueKey("email:sendbob@example.com", "welcome"),
		UniqueKey("email:send", "welcome", "bob@example.com"),
		UniqueKey("email:send", "bob@example.com", "welcome", ""),
		UniqueKey("email:send"),
	} {
		if other == a {
			t.Fatalf("%q collides", other)
		}
	}
	if UniqueKey("a:b", "c") == UniqueKey("a", "b:c") {
		t.Fatal("the parts' boundaries are lost")
	}
}
