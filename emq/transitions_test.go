package emq

import "testing"

// TestScriptsCopy: Scripts hands out a copy of the one table of
// transitions; changing it changes nothing a queue sends.
func TestScriptsCopy(t *testing.T) {
	a := Scripts()
	a[0].Source = "return 0"
	a[0].Name = "changed"
	b := Scripts()
	if b[0].Name != "enqueue" || b[0].Source != scriptEnqueue.Source() || source("enqueue") != scriptEnqueue.Source() {
		t.Fatalf("the table changed through a copy: %q", b[0].Name)
	}
}
