package bench

import (
	"fmt"
	"html"
	"io"
	"strings"
)

// Chart geometry, in SVG user units.
const (
	chartWidth  = 960
	labelWidth  = 330
	barsWidth   = 540
	rowHeight   = 30
	barHeight   = 10
	chartTop    = 70
	chartBottom = 40
)

type chartRow struct {
	label     string
	ndcg      float64
	recall100 *float64
	published bool
}

// WriteSVG draws nDCG@10 and Recall@100 as horizontal bars: one row per measured
// (ranking, fusion), then the published baselines in grey.
func (r *Report) WriteSVG(w io.Writer) error {
	var rows []chartRow
	variants := map[string]bool{}
	for _, res := range r.Results {
		variants[res.Variant] = true
	}
	for _, res := range r.Results {
		label := "canon " + res.Fusion
		if len(variants) > 1 || res.Variant != "default" {
			label += " [" + res.Variant + "]"
		}
		rc := res.Recall100
		rows = append(rows, chartRow{label: label, ndcg: res.NDCG10, recall100: &rc})
	}
	for _, b := range r.Baselines {
		rows = append(rows, chartRow{label: b.System, ndcg: b.NDCG10, recall100: b.Recall100, published: true})
	}
	height := chartTop + len(rows)*rowHeight + chartBottom
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		chartWidth, height, chartWidth, height)
	p(`<rect width="100%%" height="100%%" fill="#ffffff"/>` + "\n")
	p(`<text x="16" y="24" font-size="16" font-weight="bold">%s</text>`+"\n",
		esc(fmt.Sprintf("%s: nDCG@10 and Recall@100, canon vs published baselines", r.Dataset)))
	p(`<text x="16" y="44" fill="#555">%s</text>`+"\n",
		esc(fmt.Sprintf("%d docs, %d test queries, embedder %s, profile %s", r.Docs, r.Queries, r.Embedder, r.Profile)))
	// Legend.
	lx := labelWidth + barsWidth - 250
	p(`<rect x="%d" y="34" width="12" height="%d" fill="#1f5fa8"/><text x="%d" y="44">nDCG@10</text>`+"\n", lx, barHeight, lx+16)
	p(`<rect x="%d" y="34" width="12" height="%d" fill="#8fb4e0"/><text x="%d" y="44">Recall@100</text>`+"\n", lx+90, barHeight, lx+106)
	p(`<rect x="%d" y="34" width="12" height="%d" fill="#888888"/><text x="%d" y="44">published</text>`+"\n", lx+190, barHeight, lx+206)
	// Grid.
	gridBottom := chartTop + len(rows)*rowHeight
	for i := 0; i <= 10; i += 2 {
		x := labelWidth + barsWidth*i/10
		p(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#e3e3e3"/>`+"\n", x, chartTop-6, x, gridBottom)
		p(`<text x="%d" y="%d" text-anchor="middle" fill="#555">%.1f</text>`+"\n", x, gridBottom+16, float64(i)/10)
	}
	for i, row := range rows {
		y := chartTop + i*rowHeight
		if row.published && (i == 0 || !rows[i-1].published) {
			p(`<line x1="16" y1="%d" x2="%d" y2="%d" stroke="#999" stroke-dasharray="4 3"/>`+"\n", y-3, labelWidth+barsWidth+60, y-3)
		}
		fill, light := "#1f5fa8", "#8fb4e0"
		if row.published {
			fill, light = "#666666", "#bbbbbb"
		}
		p(`<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", labelWidth-8, y+barHeight+4, esc(row.label))
		bar := func(y int, v float64, color string) {
			wd := int(float64(barsWidth)*clamp01(v) + 0.5)
			p(`<rect x="%d" y="%d" width="%d" height="%d" fill="%s"/>`+"\n", labelWidth, y, wd, barHeight, color)
			p(`<text x="%d" y="%d" font-size="10" fill="#333">%.3f</text>`+"\n", labelWidth+wd+4, y+barHeight-1, v)
		}
		bar(y, row.ndcg, fill)
		if row.recall100 != nil {
			bar(y+barHeight+1, *row.recall100, light)
		}
	}
	p("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func clamp01(v float64) float64 { return min(max(v, 0), 1) }

func esc(s string) string { return html.EscapeString(s) }
