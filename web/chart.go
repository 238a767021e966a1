package web

import (
	"bytes"
	"fmt"
	"strconv"
	"time"
)

// series is one line of a chart panel.
type series struct {
	name, color string
	ys          []float64
}

// chartSVG renders a queue's samples as an SVG image, server-side: the
// sets' sizes over time above, the rates per minute below (completed and
// failed when the host counts them, else the dead set's growth and the
// net drain). It holds numbers and fixed labels only, nothing a job
// carries; served as image/svg+xml into an <img>, it runs no script.
func chartSVG(ss []sample, span time.Duration) []byte {
	const w, h, pad = 640, 300, 40
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`, w, h, w, h)
	b.WriteString(`<rect width="100%" height="100%" fill="#ffffff"/>`)
	if len(ss) < 2 {
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#666">collecting samples…</text></svg>`, pad, h/2)
		return b.Bytes()
	}
	var xs []float64
	t0 := ss[0].At
	total := ss[len(ss)-1].At.Sub(t0).Seconds()
	for _, s := range ss {
		xs = append(xs, s.At.Sub(t0).Seconds())
	}
	counts := []series{
		{"pending", "#1f77b4", nil}, {"active", "#2ca02c", nil},
		{"delayed", "#9467bd", nil}, {"dead", "#d62728", nil},
	}
	for _, s := range ss {
		counts[0].ys = append(counts[0].ys, float64(s.Pending))
		counts[1].ys = append(counts[1].ys, float64(s.Active))
		counts[2].ys = append(counts[2].ys, float64(s.Delayed))
		counts[3].ys = append(counts[3].ys, float64(s.Dead))
	}
	rs := rates(ss)
	var rxs []float64
	for _, r := range rs {
		rxs = append(rxs, r.At.Sub(t0).Seconds())
	}
	var rateLines []series
	if len(rs) > 0 && rs[len(rs)-1].HasCounters {
		rateLines = []series{{"completed/min", "#2ca02c", nil}, {"failed/min", "#d62728", nil}}
		for _, r := range rs {
			rateLines[0].ys = append(rateLines[0].ys, r.Completed)
			rateLines[1].ys = append(rateLines[1].ys, r.Failed)
		}
	} else {
		rateLines = []series{{"drained/min (net)", "#1f77b4", nil}, {"died/min", "#d62728", nil}}
		for _, r := range rs {
			rateLines[0].ys = append(rateLines[0].ys, r.Drained)
			rateLines[1].ys = append(rateLines[1].ys, r.Deaths)
		}
	}
	panel(&b, "jobs", xs, total, counts, pad, 10, w-2*pad, 110)
	panel(&b, "per minute", rxs, total, rateLines, pad, 160, w-2*pad, 110)
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#666">last %s, a sample every %s</text>`, pad, h-4,
		time.Duration(total*float64(time.Second)).Round(time.Second), span)
	b.WriteString(`</svg>`)
	return b.Bytes()
}

// panel draws lines of one panel at (x, y), w by h, with its scale and
// legend.
func panel(b *bytes.Buffer, title string, xs []float64, total float64, lines []series, x, y, w, h int) {
	top := 0.0
	for _, l := range lines {
		for _, v := range l.ys {
			top = max(top, v)
		}
	}
	if top == 0 {
		top = 1
	}
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#ddd"/>`, x, y, w, h)
	fmt.Fprintf(b, `<text x="%d" y="%d" fill="#333">%s</text>`, x, y+h+14, title)
	fmt.Fprintf(b, `<text x="2" y="%d" fill="#666">%s</text><text x="2" y="%d" fill="#666">0</text>`, y+10, short(top), y+h)
	lx := x + 80
	for _, l := range lines {
		fmt.Fprintf(b, `<text x="%d" y="%d" fill="%s">%s</text>`, lx, y+h+14, l.color, l.name)
		lx += 8*len(l.name) + 16
		if len(l.ys) == 0 {
			continue
		}
		b.WriteString(`<polyline fill="none" stroke-width="1.5" stroke="` + l.color + `" points="`)
		for i, v := range l.ys {
			px := float64(x)
			if total > 0 {
				px += xs[i] / total * float64(w)
			}
			py := float64(y+h) - v/top*float64(h)
			b.WriteString(strconv.FormatFloat(px, 'f', 1, 64) + "," + strconv.FormatFloat(py, 'f', 1, 64) + " ")
		}
		b.WriteString(`"/>`)
	}
}

// short renders n compactly: 950, 12.3k, 4.1M.
func short(n float64) string {
	switch {
	case n >= 1e6:
		return strconv.FormatFloat(n/1e6, 'f', 1, 64) + "M"
	case n >= 1e4:
		return strconv.FormatFloat(n/1e3, 'f', 1, 64) + "k"
	case n == float64(int64(n)):
		return strconv.FormatInt(int64(n), 10)
	}
	return strconv.FormatFloat(n, 'f', 1, 64)
}
