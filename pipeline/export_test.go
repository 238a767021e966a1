package pipeline

import "github.com/echomq/echomq-go/conn"

// Submission is what Exec would send to a Sender that reads the facts of
// a Plain submission (wants), or not.
func (b *Batch) Submission(wants bool) (conn.Cmds, error) { return b.submission(wants) }

// FactsKept is the number of commands whose facts the batch holds.
func (b *Batch) FactsKept() int { return b.facts.Len() }

// AdvanceResets moves b on as if it had been Reset n times.
func AdvanceResets(b *Batch, n uint64) { b.gen += n }

// Encoded is the batch's encoded commands.
func (b *Batch) Encoded() []byte { return b.cmds.Bytes() }
