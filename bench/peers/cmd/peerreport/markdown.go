package main

import (
	"fmt"
	"slices"
	"strings"
)

// markdown renders every table, with header (if any) quoted at the top.
func markdown(tables []*table, header string) string {
	var b strings.Builder
	b.WriteString("# Peer comparison\n\n")
	if header != "" {
		b.WriteString("```\n" + strings.TrimRight(header, "\n") + "\n```\n\n")
	}
	b.WriteString("Medians over the interleaved runs. CPU is the client process's user+sys " +
		"seconds per 1M ops (for the C reference, the child's rusage). " +
		"\"vs best peer\": ops/s ÷ the best median of rueidis/goredis/redigo (higher is better), " +
		"CPU ÷ their lowest median CPU (lower is better). \"CPU vs floor\": CPU ÷ the median CPU of " +
		"floor, the reference loop with no library (pre-encoded batches on a bare net.Conn, replies " +
		"counted, not decoded).\n\n")
	for _, t := range tables {
		writeTable(&b, t)
	}
	return b.String()
}

func writeTable(b *strings.Builder, t *table) {
	fmt.Fprintf(b, "## %s\n\n", t.shape.title(t.size))
	b.WriteString("| client | runs | median ops/s | min – max | CPU s / 1M ops | allocs/op | B/op | ops/s vs best peer | CPU vs best peer | CPU vs floor |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	bestOps, bestCPU := t.bestPeer()
	floorCPU := t.floorCPU()
	var notes []string
	for _, s := range t.stats {
		if s.runs == 0 {
			if s.skipped != "" {
				notes = append(notes, fmt.Sprintf("%s: skipped (%s)", s.client, s.skipped))
			}
			continue
		}
		ops, cpu := median(s.ops), median(s.cpu)
		allocs, bytes := "n/a", "n/a"
		if len(s.allocs) > 0 {
			allocs = fmt.Sprintf("%.2f", median(s.allocs))
			bytes = fmt.Sprintf("%.0f", median(s.bytes))
		}
		name := s.client
		if s.version != "" {
			name += " " + strings.TrimPrefix(s.version, s.client+" ")
		}
		fmt.Fprintf(b, "| %s | %d | %s | %s – %s | %.2f | %s | %s | %s | %s | %s |\n",
			name, s.runs, thousands(ops), thousands(slices.Min(s.ops)), thousands(slices.Max(s.ops)),
			cpu, allocs, bytes, ratio(ops, bestOps), ratio(cpu, bestCPU), ratio(cpu, floorCPU))
		if s.errors > 0 {
			notes = append(notes, fmt.Sprintf("%s: %d WRONG REPLIES", s.client, s.errors))
		}
		if s.note != "" {
			notes = append(notes, fmt.Sprintf("%s: %s", s.client, s.note))
		}
	}
	b.WriteString("\n")
	if n := typedNote(t); n != "" {
		notes = append(notes, n)
	}
	for _, n := range notes {
		b.WriteString("- " + n + "\n")
	}
	if len(notes) > 0 {
		b.WriteString("\n")
	}
}

// typedNote compares echomq-typed with echomq when both ran: CPU median
// ÷ median, and each round's ratio (run i of one ÷ run i of the other,
// interleaved in the same round).
func typedNote(t *table) string {
	var raw, typed *stat
	for _, s := range t.stats {
		switch s.client {
		case "echomq":
			raw = s
		case "echomq-typed":
			typed = s
		}
	}
	if raw == nil || typed == nil || raw.runs == 0 || typed.runs == 0 {
		return ""
	}
	n := fmt.Sprintf("typed ÷ raw (echomq-typed ÷ echomq) client CPU: %s of the medians",
		ratio(median(typed.cpu), median(raw.cpu)))
	if len(raw.cpu) == len(typed.cpu) {
		per := make([]string, len(raw.cpu))
		for i := range raw.cpu {
			per[i] = ratio(typed.cpu[i], raw.cpu[i])
		}
		n += "; per round " + strings.Join(per, " ")
	}
	return n
}

func ratio(x, best float64) string {
	if best == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2fx", x/best)
}

// thousands formats a rate as 1,234,567.
func thousands(x float64) string {
	s := fmt.Sprintf("%.0f", x)
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}
