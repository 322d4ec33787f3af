package report

import (
	"fmt"
	"html/template"
	"image/color"
	"io"
	"math"
	"strings"
	"sync"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/iolab/iolab/internal/analysis"
	"github.com/iolab/iolab/internal/bisect"
	"github.com/iolab/iolab/internal/metrics"
)

// WriteBisect writes a bisect's answer as text.
func WriteBisect(w io.Writer, v *analysis.BisectView) error {
	fmt.Fprintf(w, "bisect %s of %s (variant %s) on %s: %d commits from %.10s (good) to %.10s (bad)\n", v.ID, v.Plan, v.Variant, v.Metric, v.Commits-1, v.Good.Hash, v.Bad.Hash)
	if v.Change.Ratio > 0 {
		fmt.Fprintf(w, "  bad against good: %s over %d rounds\n", ChangeText(v.Change), v.Change.Rounds)
	}
	if !v.Differ {
		fmt.Fprintf(w, "  %s\n", v.Verdict)
		return nil
	}
	fmt.Fprintf(w, "  %s\n", v.Verdict)
	for _, c := range v.Culprits {
		fmt.Fprintf(w, "  culprit %s %q (%s): %.0f%% of the change", c.Hash, c.Subject, c.Date, 100*c.Share)
		if c.Step != nil {
			fmt.Fprintf(w, "; against its parent %s over %d rounds", ChangeText(*c.Step), c.Step.Rounds)
		}
		if !c.Confirmed {
			fmt.Fprint(w, " (not confirmed)")
		}
		fmt.Fprintln(w)
	}
	for _, a := range v.Ambiguous {
		var hashes []string
		for _, c := range a.Commits {
			hashes = append(hashes, c.Hash[:10])
		}
		fmt.Fprintf(w, "  ambiguous: %s; the change could be any of %s\n", a.Why, strings.Join(hashes, " "))
	}
	if len(v.Skipped) > 0 {
		var hashes []string
		for _, c := range v.Skipped {
			hashes = append(hashes, fmt.Sprintf("%.10s %q", c.Hash, c.Subject))
		}
		fmt.Fprintf(w, "  skipped (did not build): %s\n", strings.Join(hashes, ", "))
	}
	fmt.Fprintf(w, "  %d steps, %d rounds; the steps:\n", len(v.Steps), v.Rounds)
	for _, s := range v.Steps {
		what, verdict := fmt.Sprintf("%.10s..%.10s", s.Low, s.High), string(s.Verdict)
		switch {
		case s.Mid != "":
			what = fmt.Sprintf("%.10s in %s", s.Mid, what)
		case s.Confirms:
			what, verdict = fmt.Sprintf("%.10s on its parent", s.High), confirmation(s, v.Change)
		}
		fmt.Fprintf(w, "    %d  %-40s %-12s %3d rounds  %s\n", s.Step, what, verdict, s.Rounds, s.Experiment)
		if s.ClientDelayed > 0 {
			fmt.Fprintf(w, "       and %d rounds not counted: in a commit's run there iolab's own delay was over %.0f%% of what it measured\n", s.ClientDelayed, metrics.GenDelayShare)
		}
	}
	return nil
}

// confirmation is what a step confirming a culprit found, in a word:
// confirmed when the culprit is shown to change the way the whole range
// does, refuted when it is shown not to (the same as its parent, or
// changed the other way), else undecided.
func confirmation(s analysis.BisectStep, change analysis.RatioEstimate) string {
	switch {
	case analysis.Shown(s.Whole, change):
		return "confirmed"
	case s.Verdict == bisect.Between || s.Verdict == bisect.LikeLow:
		return "refuted"
	}
	return string(s.Verdict)
}

// ChangeText is a ratio with its interval as changes in percent: +14.8%
// [+11.2%, +18.5%]; without an interval (too few rounds) or a ratio, it
// says so, never NaN.
func ChangeText(e analysis.RatioEstimate) string {
	positive := func(x float64) bool { return x > 0 && !math.IsInf(x, 0) } // NaN is not > 0
	switch {
	case !positive(e.Ratio):
		return "not measured"
	case !positive(e.CI95[0]) || !positive(e.CI95[1]):
		return fmt.Sprintf("%+.1f%% (no interval yet)", 100*(e.Ratio-1))
	}
	return fmt.Sprintf("%+.1f%% [%+.1f%%, %+.1f%%]", 100*(e.Ratio-1), 100*(e.CI95[0]-1), 100*(e.CI95[1]-1))
}

// BisectHTML writes a bisect's answer as a page: the answer, the path of
// its steps over the commit range (each measured commit where the search
// placed it on the change, 0 good to 1 bad; the culprits, the skipped and
// the ambiguous commits marked), and the steps.
func BisectHTML(w io.Writer, v *analysis.BisectView) error {
	fig, err := bisectPlot(v)
	if err != nil {
		return err
	}
	var text strings.Builder
	if err := WriteBisect(&text, v); err != nil {
		return err
	}
	return bisectTemplate().Execute(w, struct {
		V      *analysis.BisectView
		Figure figure
		Text   string
	}{v, fig, text.String()})
}

// bisectPlot draws the path: x the commit's place in the range (good 0),
// y where the search placed it on the change.
func bisectPlot(v *analysis.BisectView) (figure, error) {
	p := newPlot(fmt.Sprintf("bisect of %s on %s: where each measured commit lies", v.Plan, v.Metric), "commit (good = 0)", "share of the change (good 0, bad 1)")
	p.X.Min, p.X.Max = -0.5, float64(v.Commits-1)+0.5
	p.Y.Min, p.Y.Max = -0.1, 1.1
	index := map[string]int{v.Good.Hash: 0, v.Bad.Hash: v.Commits - 1}
	var placed, undecided, skipped plotter.XYs
	labels := plotter.XYLabels{}
	for _, s := range v.Steps {
		if s.Mid == "" {
			continue
		}
		index[s.Mid] = s.MidIndex
		switch {
		case s.Verdict == bisect.Unbuildable:
			skipped = append(skipped, plotter.XY{X: float64(s.MidIndex), Y: 0.5})
		case s.Place != nil:
			placed = append(placed, plotter.XY{X: float64(s.MidIndex), Y: *s.Place})
		case finiteXY(s.Position, 0):
			undecided = append(undecided, plotter.XY{X: float64(s.MidIndex), Y: math.Max(0, math.Min(1, s.Position))})
		default:
			undecided = append(undecided, plotter.XY{X: float64(s.MidIndex), Y: 0.5})
		}
		labels.XYs = append(labels.XYs, plotter.XY{X: float64(s.MidIndex), Y: 1.05})
		labels.Labels = append(labels.Labels, fmt.Sprint(s.Step))
	}
	ends := plotter.XYs{{X: 0, Y: 0}, {X: float64(v.Commits - 1), Y: 1}}
	legend := []legendEntry{entry("the ends (good, bad)", variantColour(0), "box")}
	if err := addMarks(p, ends, variantColour(0), draw.BoxGlyph{}); err != nil {
		return figure{}, err
	}
	if err := addMarks(p, placed, variantColour(1), draw.CircleGlyph{}); err != nil {
		return figure{}, err
	}
	if len(placed) > 0 {
		legend = append(legend, entry("a step's commit, placed (its number above)", variantColour(1), "dot"))
	}
	if err := addMarks(p, undecided, variantColour(2), draw.RingGlyph{}); err != nil {
		return figure{}, err
	}
	if len(undecided) > 0 {
		legend = append(legend, entry("undecided (its estimate)", variantColour(2), "ring"))
	}
	if err := addMarks(p, skipped, variantColour(3), draw.CrossGlyph{}); err != nil {
		return figure{}, err
	}
	if len(skipped) > 0 {
		legend = append(legend, entry("did not build (skipped)", variantColour(3), "box"))
	}
	for _, c := range v.Culprits {
		x := float64(c.Index)
		line, err := plotter.NewLine(plotter.XYs{{X: x, Y: -0.1}, {X: x, Y: 1.1}})
		if err != nil {
			return figure{}, err
		}
		line.Color = color.RGBA{R: 200, A: 255}
		line.Width = vg.Points(1.5)
		p.Add(line)
	}
	if len(v.Culprits) > 0 {
		legend = append(legend, entry("culprit", color.RGBA{R: 200, A: 255}, "line"))
	}
	if len(labels.XYs) > 0 {
		l, err := plotter.NewLabels(labels)
		if err != nil {
			return figure{}, err
		}
		p.Add(l)
	}
	return drawFigure(p, legend, plotHeight)
}

func addMarks(p *plot.Plot, xys plotter.XYs, c color.Color, shape draw.GlyphDrawer) error {
	if len(xys) == 0 {
		return nil
	}
	s, err := plotter.NewScatter(xys)
	if err != nil {
		return err
	}
	s.GlyphStyle.Color, s.GlyphStyle.Radius, s.GlyphStyle.Shape = c, vg.Points(3.5), shape
	p.Add(s)
	return nil
}

var bisectTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("bisect").Funcs(template.FuncMap{"confirmation": confirmation, "change": func(e *analysis.RatioEstimate) string { return ChangeText(*e) }, "mul100": func(x float64) float64 { return 100 * x }}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="generator" content="iolab">
<title>iolab bisect {{.V.ID}}: {{.V.Plan}}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 0 auto; max-width: 72rem; padding: 1rem 2rem; color: #222; }
table { border-collapse: collapse; font-size: .9rem; } th, td { border: 1px solid #ddd; padding: .25rem .5rem; text-align: left; }
figure.plot svg { max-width: 100%; height: auto; } ul.legend { list-style: none; padding: 0; font-size: .85rem; }
ul.legend li { display: inline-block; margin-right: 1.2rem; } .mark { display: inline-block; width: .7rem; height: .7rem; margin-right: .35rem; }
pre { background: #f7f7f7; padding: .6rem; overflow-x: auto; font-size: .8rem; }
</style>
</head>
<body>
<h1>Bisect {{.V.ID}} of {{.V.Plan}} on {{.V.Metric}}</h1>
<p class="answer">{{.V.Verdict}}{{range .V.Culprits}} — culprit <code>{{.Hash}}</code> “{{.Subject}}” ({{.Date}}), {{printf "%.0f" (mul100 .Share)}}% of the change{{end}}</p>
<figure class="plot" data-plot="bisect-path">{{.Figure.SVG}}
<ul class="legend">{{range .Figure.Legend}}<li><span class="mark" style="background: {{.Colour}}"></span>{{.Label}}</li>{{end}}</ul>
</figure>
<table>
<tr><th>step</th><th>commit</th><th>between</th><th>verdict</th><th>commit / low</th><th>high / low</th><th>rounds</th><th>experiment</th></tr>
{{range .V.Steps}}<tr><td>{{.Step}}</td>{{if .Confirms}}<td><code>{{printf "%.10s" .High}}</code> on its parent</td><td><code>{{printf "%.10s" .Low}}</code> … <code>{{printf "%.10s" .High}}</code></td><td>{{confirmation . $.V.Change}}</td>{{else}}<td><code>{{printf "%.10s" .Mid}}</code></td><td><code>{{printf "%.10s" .Low}}</code> … <code>{{printf "%.10s" .High}}</code></td><td>{{.Verdict}}</td>{{end}}<td>{{with .VsLow}}{{change .}}{{end}}</td><td>{{with .Whole}}{{change .}}{{end}}</td><td>{{.Rounds}}{{with .ClientDelayed}} (and {{.}} not counted: iolab delayed){{end}}</td><td>{{.Experiment}}</td></tr>
{{end}}</table>
<pre>{{.Text}}</pre>
</body>
</html>
`))
})
