package main

import (
	"fmt"
	"html"
	"math"
	"slices"
	"strings"
)

// Chart geometry: a 2x2 grid of panels (PING, SET) x (ops/s, CPU).
const (
	panelW, panelH = 420.0, 260.0
	padL, padR     = 70.0, 20.0
	padT, padB     = 36.0, 44.0
	legendH        = 40.0
)

// colors per client; unknown clients cycle through extra.
var colors = map[string]string{
	"echomq":           "#d62728",
	"echomq-typed":     "#ff9896",
	"rueidis":          "#1f77b4",
	"goredis":          "#2ca02c",
	"redigo":           "#ff7f0e",
	"redis-benchmark":  "#7f7f7f",
	"valkey-benchmark": "#7f7f7f",
}
var extra = []string{"#9467bd", "#8c564b", "#e377c2", "#17becf"}

// point is one client's median at one depth.
type point struct{ depth, ops, cpu float64 }

// series collects, for workload wl, each client's medians by pipeline
// depth (single-goroutine shapes only), clients in order of appearance.
func series(tables []*table, wl string) (clients []string, pts map[string][]point) {
	pts = map[string][]point{}
	for _, t := range tables {
		if t.shape.workload != wl || t.shape.goroutines > 1 {
			continue
		}
		for _, s := range t.stats {
			if s.runs == 0 {
				continue
			}
			if _, ok := pts[s.client]; !ok {
				clients = append(clients, s.client)
			}
			pts[s.client] = append(pts[s.client], point{float64(t.shape.depth), median(s.ops), median(s.cpu)})
		}
	}
	for _, c := range clients {
		slices.SortFunc(pts[c], func(a, b point) int { return int(a.depth - b.depth) })
	}
	return clients, pts
}

// chart renders the SVG: hand-written, stdlib only.
func chart(tables []*table) string {
	var b strings.Builder
	w, h := 2*panelW, legendH+2*panelH
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="11">`+"\n", w, h, w, h)
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")

	var all []string
	for i, wl := range []string{"ping", "set"} {
		clients, pts := series(tables, wl)
		for _, c := range clients {
			if !slices.Contains(all, c) {
				all = append(all, c)
			}
		}
		y0 := legendH + float64(i)*panelH
		panel(&b, 0, y0, strings.ToUpper(wl)+": ops/s", clients, pts, func(p point) float64 { return p.ops }, all)
		panel(&b, panelW, y0, strings.ToUpper(wl)+": client CPU s per 1M ops (lower is better)", clients, pts, func(p point) float64 { return p.cpu }, all)
	}
	x := 10.0
	for _, c := range all {
		fmt.Fprintf(&b, `<rect x="%.0f" y="14" width="14" height="4" fill="%s"/><text x="%.0f" y="20">%s</text>`+"\n",
			x, color(c, all), x+18, html.EscapeString(c))
		x += 30 + 7*float64(len(c))
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="34" fill="#555">medians; log scales; x: pipeline depth, one goroutine, one connection</text>`+"\n", 10.0)
	b.WriteString("</svg>\n")
	return b.String()
}

func color(c string, all []string) string {
	if col, ok := colors[c]; ok {
		return col
	}
	i := 0
	for _, o := range all {
		if o == c {
			break
		}
		if _, ok := colors[o]; !ok {
			i++
		}
	}
	return extra[i%len(extra)]
}

// panel draws one plot at (ox, oy): log-scale depth on x, val on y from 0.
func panel(b *strings.Builder, ox, oy float64, title string, clients []string, pts map[string][]point, val func(point) float64, all []string) {
	fmt.Fprintf(b, `<text x="%.0f" y="%.0f" font-weight="bold">%s</text>`+"\n", ox+padL, oy+20, html.EscapeString(title))
	pw, ph := panelW-padL-padR, panelH-padT-padB
	left, top := ox+padL, oy+padT
	var depths []float64
	ymin, ymax := math.Inf(1), 0.0
	for _, c := range clients {
		for _, p := range pts[c] {
			if !slices.Contains(depths, p.depth) {
				depths = append(depths, p.depth)
			}
			if v := val(p); v > 0 {
				ymin, ymax = math.Min(ymin, v), math.Max(ymax, v)
			}
		}
	}
	if len(depths) == 0 || ymax == 0 {
		fmt.Fprintf(b, `<text x="%.0f" y="%.0f" fill="#999">no data</text>`+"\n", left+10, top+ph/2)
		return
	}
	slices.Sort(depths)
	lo, hi := math.Log10(depths[0]), math.Log10(depths[len(depths)-1])
	if hi == lo {
		lo, hi = lo-0.5, hi+0.5
	}
	xs := func(d float64) float64 { return left + (math.Log10(d)-lo)/(hi-lo)*pw }
	// y is log scale too: depth 1 and depth 1000 differ by 10-100x.
	ylo, yhi := math.Log10(ymin/1.25), math.Log10(ymax*1.25)
	ys := func(v float64) float64 { return top + ph - (math.Log10(v)-ylo)/(yhi-ylo)*ph }
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#ccc"/>`+"\n", left, top, pw, ph)
	mantissas := []float64{1, 2, 5}
	if yhi-ylo < 1 { // less than a decade shown: finer ticks
		mantissas = []float64{1, 1.5, 2, 3, 4, 5, 6, 7, 8, 9}
	}
	for e := math.Floor(ylo); e <= yhi; e++ {
		for _, m := range mantissas {
			v := m * math.Pow(10, e)
			if lv := math.Log10(v); lv < ylo || lv > yhi {
				continue
			}
			y := ys(v)
			stroke := "#eee"
			if m == 1 {
				stroke = "#ccc"
			}
			fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/><text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n",
				left, y, left+pw, y, stroke, left-4, y+4, short(v))
		}
	}
	for _, d := range depths {
		x := xs(d)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/><text x="%.1f" y="%.1f" text-anchor="middle">%g</text>`+"\n",
			x, top, x, top+ph, x, top+ph+14, d)
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#555">pipeline depth</text>`+"\n", left+pw/2, top+ph+30)
	for _, c := range clients {
		col := color(c, all)
		var coords []string
		for _, p := range pts[c] {
			coords = append(coords, fmt.Sprintf("%.1f,%.1f", xs(p.depth), ys(val(p))))
		}
		dash := ""
		if strings.HasSuffix(c, "-benchmark") {
			dash = ` stroke-dasharray="5,3"`
		}
		fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(coords, " "), col, dash)
		for _, p := range pts[c] {
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s depth %g: %s</title></circle>`+"\n",
				xs(p.depth), ys(val(p)), col, html.EscapeString(c), p.depth, short(val(p)))
		}
	}
}

// short formats an axis value: 1.2M, 350k, 0.75.
func short(v float64) string {
	switch {
	case v >= 1e6:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", v/1e6), ".0") + "M"
	case v >= 1e3:
		return fmt.Sprintf("%.0fk", v/1e3)
	case v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
}
