package sentinel

import (
	"fmt"
	"log/slog"

	"github.com/echomq/echomq-go/internal/redact"
)

// Printing never shows a password, the sentinels' nor the data nodes':
// Options and *MasterSet implement fmt.Formatter, and every verb prints
// their String (Options would otherwise print through the embedded
// conn.Options' Format, which knows nothing of the sentinels).

// Format prints String for any verb.
func (o Options) Format(f fmt.State, verb rune) {
	redact.Format(f, verb, "sentinel.Options", o.String())
}

// LogValue is what log/slog logs for Options: String, both passwords
// redacted and no function printed.
func (o Options) LogValue() slog.Value { return slog.StringValue(o.String()) }

// String describes the MasterSet by its options, passwords redacted,
// and the primary it last learnt. A nil *MasterSet is "<nil>".
func (m *MasterSet) String() string {
	if m == nil {
		return "<nil>"
	}
	m.mu.Lock()
	primary := m.primary
	m.mu.Unlock()
	return "sentinel.MasterSet{" + m.opts.String() + " primary=" + primary + "}"
}

// GoString is String.
func (m *MasterSet) GoString() string { return m.String() }

// Format prints String for any verb.
func (m *MasterSet) Format(f fmt.State, verb rune) {
	redact.Format(f, verb, "*sentinel.MasterSet", m.String())
}
