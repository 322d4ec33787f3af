package report

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/iolab/iolab/internal/analysis"
	"github.com/iolab/iolab/internal/envinfo"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/store"
)

// Page is what the HTML report shows: experiments, and the histories of
// their cells across the store.
type Page struct {
	Reports   []*analysis.Report
	Histories []analysis.HistoryView
	// Profiles are the servers' profiles as `iolab show --profile`
	// prints them, by experiment.
	Profiles map[string]string
	// Run is the run whose seconds are drawn; 0 chooses, per
	// experiment, the measured run furthest from its variant's median.
	Run       int64
	Generated time.Time
}

//go:embed report.html.tmpl
var htmlTemplate string

// pageTemplate is parsed when a page is first written, not at every
// start of iolab.
var pageTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report").Funcs(template.FuncMap{
		"verdictClass": func(v string) string { return "verdict-" + strings.ReplaceAll(v, " ", "-") },
		"mul100":       func(v float64) float64 { return 100 * v },
	}).Parse(htmlTemplate))
})

// pageMark is what every page iolab writes carries in its head.
const pageMark = `<meta name="generator" content="iolab">`

// IsPage says whether a file's first bytes are a page iolab wrote.
func IsPage(head []byte) bool { return bytes.Contains(head, []byte(pageMark)) }

// HTML writes the report as one self-contained page: inline SVG plots
// (gonum/plot) and CSS, no script, nothing fetched when it is opened.
// Every string from the user (names, notes, commands) is escaped by
// html/template, and by the SVG writer inside plots.
func HTML(w io.Writer, pg Page) error {
	view := htmlPage{Generated: pg.Generated.Local().Format("2006-01-02 15:04:05")}
	for _, r := range pg.Reports {
		e, err := htmlExperimentOf(r, pg)
		if err != nil {
			return fmt.Errorf("report of %s: %w", r.Experiment, err)
		}
		view.Experiments = append(view.Experiments, e)
		view.Title = append(view.Title, r.Experiment)
	}
	hs, err := htmlHistories(pg.Histories)
	if err != nil {
		return fmt.Errorf("history plots: %w", err)
	}
	view.Histories = hs
	return pageTemplate().Execute(w, view)
}

type htmlPage struct {
	Title       []string
	Generated   string
	Experiments []htmlExperiment
	Histories   []htmlHistory
}

type htmlExperiment struct {
	*analysis.Report
	Started, Ended string
	Answers        []Answer
	AnswerOf       string // what the answers compare: "The answer (IOPS, higher is better; each variant against a):"
	Verdicts       []htmlVerdict
	Matrix         *verdictMatrix
	Cells          []htmlCell
	Chosen         *htmlRun
	Scales         []figure
	Curves         []figure
	Profiles       string
	Env            [][2]string
	Text           string // the text report, as iolab show prints it
	Failed         int
	// SegmentRows are each segment's medians per cell, of a load run in
	// segments: cell, segment, experiment, runs, ops/s, p99.
	SegmentRows [][6]string
}

type htmlVerdict struct {
	Cell, Variant, Metric, Estimate, MDE, Verdict string
	Primary                                       bool
}

// verdictMatrix is the primary comparisons as a table: a row per
// variant, a column per cell — turned so that cells are rows when there
// are more cells than variants, so a study of 36 cells reads down the
// page instead of running off its right edge.
type verdictMatrix struct {
	Corner  string   // what the rows are: variant or cell
	Columns []string // the other
	Rows    []verdictRow
}

type verdictRow struct {
	Label string
	Marks []htmlVerdict // per column; Verdict "" where there is none
}

func matrixOf(r *analysis.Report, variants []string) *verdictMatrix {
	var cells, others []string
	at := map[[2]string]htmlVerdict{}
	for _, c := range r.Comparisons {
		if !c.Primary {
			continue
		}
		if !slices.Contains(cells, c.Cell) {
			cells = append(cells, c.Cell)
		}
		at[[2]string{c.Variant, c.Cell}] = htmlVerdict{Estimate: viewEstimate(c), Verdict: c.Verdict}
	}
	if len(cells) == 0 {
		return nil
	}
	for _, v := range variants {
		if v != r.Baseline {
			others = append(others, v)
		}
	}
	m := &verdictMatrix{Corner: compared(r), Columns: cells}
	rows, key := others, func(row, col string) [2]string { return [2]string{row, col} }
	if len(cells) > len(others) {
		m.Corner, m.Columns, rows = "cell", others, cells
		key = func(row, col string) [2]string { return [2]string{col, row} }
	}
	for _, row := range rows {
		vr := verdictRow{Label: row}
		for _, col := range m.Columns {
			vr.Marks = append(vr.Marks, at[key(row, col)])
		}
		m.Rows = append(m.Rows, vr)
	}
	return m
}

type htmlCell struct {
	Name, Workload, Params, Metric string
	Anchor                         string // the cell's section, for the table of contents
	Summary                        []htmlSummary
	Plots                          []figure
}

type htmlSummary struct {
	Variant, Median, CV, P50, P99, P999 string
	Runs                                int
}

type htmlRun struct {
	ID                 int64
	Cell, Variant, Why string
	Round              int
	Start              string
	Plots              []figure
}

type htmlHistory struct {
	Title string
	// Plots are the primary metric's history, then a latency's beside it.
	Plots []figure
	Rows  []htmlHistoryRow
	Foot  string
}

type htmlHistoryRow struct {
	Variant, Experiment, Date, Median, Previous, Verdict, Change, Changes string
	Runs                                                                  int
	Notes                                                                 []string
}

// variantOrder is the report's variants, the baseline first: the order
// of colours in every plot.
func variantOrder(r *analysis.Report) []string {
	var out []string
	if r.Baseline != "" {
		out = append(out, r.Baseline)
	}
	for _, c := range r.Cells {
		if !slices.Contains(out, c.Variant) {
			out = append(out, c.Variant)
		}
	}
	return out
}

func variantLabel(v string) string {
	if v == "" {
		return "runs"
	}
	return v
}

func htmlExperimentOf(r *analysis.Report, pg Page) (htmlExperiment, error) {
	e := htmlExperiment{Report: r, Profiles: pg.Profiles[r.Experiment]}
	var text bytes.Buffer
	plain := *r
	plain.Colour = false
	if err := Terminal(&text, &plain); err != nil {
		return e, err
	}
	e.Text = text.String()
	e.span(r)
	e.Answers, e.AnswerOf = Answers(r), answerOf(r)
	e.Verdicts = htmlVerdicts(r)
	if v := r.Segments; v != nil {
		for _, c := range v.Cells {
			for _, sf := range c.Segments {
				e.SegmentRows = append(e.SegmentRows, [6]string{c.Cell, sf.Segment, v.Experiments[sf.Segment], fmt.Sprint(sf.Runs), count(sf.OpsPerS), latency(sf.P99Ns)})
			}
		}
	}
	variants := variantOrder(r)
	e.Matrix = matrixOf(r, variants)
	var names []string
	for _, c := range r.Cells {
		if !c.Searched && !slices.Contains(names, c.Name) {
			names = append(names, c.Name)
		}
	}
	for i, name := range names {
		hc, err := htmlCellOf(r, name, variants)
		if err != nil {
			return e, fmt.Errorf("cell %s: %w", name, err)
		}
		hc.Anchor = fmt.Sprintf("exp-%s-cell-%d", r.Experiment, i+1)
		e.Cells = append(e.Cells, hc)
	}
	chosen, err := chosenRun(r, pg.Run, variants)
	if err != nil {
		return e, err
	}
	e.Chosen = chosen
	for _, s := range r.Scales {
		f, err := scalePlot(s)
		if err != nil {
			return e, fmt.Errorf("scale plot of %s: %w", s.Metric, err)
		}
		title := s.Cell + ": " + s.Metric
		if s.Variant != "" {
			title = s.Variant + "/" + title
		}
		f.Kind, f.Caption = "scale", title+": each scale's median with its interval, the best model, those the data cannot tell from it, and the band where one run would land out to the extrapolations"
		e.Scales = appendFigure(e.Scales, f)
	}
	e.Curves, err = curveFigures(r, variants)
	if err != nil {
		return e, err
	}
	if env := r.Env; env != nil {
		e.Env = envRows(env)
	}
	return e, nil
}

// span sets when the experiment's runs began and ended, and how many
// failed.
func (e *htmlExperiment) span(r *analysis.Report) {
	var first, last time.Time
	for _, run := range r.Runs {
		if run.Status == store.StatusFailed {
			e.Failed++
		}
		if first.IsZero() || (!run.Start.IsZero() && run.Start.Before(first)) {
			first = run.Start
		}
		if end := run.Start.Add(time.Duration(run.DurationS * float64(time.Second))); end.After(last) {
			last = end
		}
	}
	if !first.IsZero() {
		e.Started, e.Ended = first.Local().Format("2006-01-02 15:04:05"), last.Local().Format("2006-01-02 15:04:05")
	}
}

// htmlVerdicts are the comparisons' verdicts, the primary ones first.
func htmlVerdicts(r *analysis.Report) []htmlVerdict {
	var out []htmlVerdict
	for _, c := range r.Comparisons {
		label, _ := metricFormat(c.Metric)
		out = append(out, htmlVerdict{Cell: c.Cell, Variant: c.Variant, Metric: label, Primary: c.Primary,
			Estimate: viewEstimate(c), MDE: mde(c.Comparison), Verdict: c.Verdict})
	}
	slices.SortStableFunc(out, func(a, b htmlVerdict) int {
		if a.Primary != b.Primary {
			if a.Primary {
				return -1
			}
			return 1
		}
		return 0
	})
	return out
}

// envRows are the machine's facts the page shows.
func envRows(env *envinfo.Snapshot) [][2]string {
	rows := [][2]string{{"host", env.Hostname}, {"kernel", env.Kernel}, {"CPU", fmt.Sprintf("%s x%d", env.CPUModel, env.CPUs)},
		{"memory", metrics.FormatBytes(float64(env.MemTotalBytes))}, {"iolab", strings.TrimSpace(env.IolabVersion + " " + env.IolabCommit)}, {"Go", env.GoVersion}}
	if env.Governor != "" {
		rows = append(rows, [2]string{"CPU governor", env.Governor})
	}
	if t := env.Target; t != nil {
		rows = append(rows, [2]string{"target", strings.TrimSpace(fmt.Sprintf("%s on %s (%s %s %s)", t.Path, t.MountPoint, t.FSType, t.Device, t.Model))})
	}
	return rows
}

func measured(run analysis.RunView) bool { return !run.Warmup && run.Status == store.StatusOK }

func htmlCellOf(r *analysis.Report, name string, variants []string) (htmlCell, error) {
	hc := htmlCell{Name: name}
	var p cellPlots
	for _, cv := range r.Cells {
		if cv.Name != name {
			continue
		}
		vi := slices.Index(variants, cv.Variant)
		hc.Workload, hc.Params, hc.Metric = cv.Workload, cellParams(r, name), analysis.PrimaryMetric(cv.Workload)
		switch hc.Metric {
		case "ops_per_s", "bytes_per_s":
			p.secondsMetric = hc.Metric
		}
		p.addVariant(r, cv, vi, hc.Metric)
		hc.Summary = append(hc.Summary, summaryRows(cv, hc.Metric)...)
	}
	slices.SortStableFunc(p.strips, func(a, b stripGroup) int { return a.colour - b.colour })
	names := make([]string, len(variants))
	for i, v := range variants {
		names[i] = variantLabel(v)
	}
	for _, pl := range p.specs(hc.Metric, names) {
		f, err := pl.draw()
		if err != nil {
			return hc, fmt.Errorf("%s plot: %w", pl.kind, err)
		}
		f.Kind, f.Caption = pl.kind, pl.caption
		hc.Plots = appendFigure(hc.Plots, f)
	}
	return hc, nil
}

// cellPlots is what a cell's plots draw, gathered variant by variant.
type cellPlots struct {
	cdfs          []cdfGroup
	strips        []stripGroup
	order, delays []timePoint
	ops, p99      []secondsLine
	secondsMetric string // the metric the seconds draw: "" for none
}

// addVariant gathers one variant's runs of the cell (vi its colour):
// each measured run's metric and generator delay, every run's place in
// the experiment, every second, and the latency of every operation.
func (p *cellPlots) addVariant(r *analysis.Report, cv analysis.CellView, vi int, metric string) {
	g := stripGroup{Name: variantLabel(cv.Variant), Summary: cv.Summary[metric], colour: vi}
	for _, run := range r.Runs {
		if run.Cell != cv.Name || run.Variant != cv.Variant || run.Status != store.StatusOK {
			continue
		}
		v, ok := run.Metrics[metric]
		if !ok {
			continue
		}
		if !run.Warmup {
			g.Values = append(g.Values, v)
		}
		p.order = append(p.order, timePoint{At: run.Start, Value: v, Variant: vi, Warmup: run.Warmup})
		if d, ok := run.Metrics["gen_delay_pct"]; ok && !run.Warmup {
			p.delays = append(p.delays, timePoint{At: run.Start, Value: d, Variant: vi})
		}
		if len(run.Series) > 0 && !run.Warmup {
			p.addSeconds(run, vi)
		}
	}
	p.strips = append(p.strips, g)
	dirs := slices.Sorted(maps.Keys(cv.Hist))
	for _, d := range dirs {
		label := variantLabel(cv.Variant)
		if len(dirs) > 1 {
			label += " " + d
		}
		p.cdfs = append(p.cdfs, cdfGroup{Name: label, H: cv.Hist[d]})
	}
}

// addSeconds gathers a run's full seconds: its rate and its p99.
func (p *cellPlots) addSeconds(run analysis.RunView, vi int) {
	o, q := secondsLine{Variant: vi}, secondsLine{Variant: vi}
	for _, s := range fullSeconds(run) {
		at := run.Start.Add(time.Duration(s.T) * time.Second)
		v := float64(s.Ops)
		if p.secondsMetric == "bytes_per_s" {
			v = float64(s.Bytes)
		}
		o.Points = append(o.Points, timePoint{At: at, Value: v, Variant: vi})
		if s.Ops > 0 {
			q.Points = append(q.Points, timePoint{At: at, Value: float64(s.P99Ns), Variant: vi})
		}
	}
	p.ops, p.p99 = append(p.ops, o), append(p.p99, q)
}

// specs are the cell's plots, with their captions.
func (p *cellPlots) specs(metric string, names []string) []plotSpec {
	plots := []plotSpec{
		{"strip", "Each measured run of each variant; the square and bar are the median and its 95% interval.",
			func() (figure, error) { return stripPlot(metric, p.strips) }},
		{"cdf", "Latency of every operation of the measured runs, merged from their histograms; the dots mark p50, p99 and p99.9.",
			func() (figure, error) { return cdfPlot(p.cdfs) }},
		{"run-order", "Every run where it fell in the experiment: a trend all variants share is drift of the machine or the target, which interleaved rounds cancel.",
			func() (figure, error) {
				return runOrderPlot(metric, p.order, names, "every run at the time it ran")
			}},
	}
	if len(p.delays) > 0 {
		plots = append(plots, plotSpec{"generator", fmt.Sprintf("iolab's own delay per operation in each measured run (its threads' wait for a CPU, or its free workers' late starts), as a share of the median the run measured (response time, else service time): a run past %.0f%% measured the client as much as the target, and a burst of other work on the machine shows as the runs it hit.", metrics.GenDelayShare),
			func() (figure, error) {
				return runOrderPlot("gen_delay_pct", p.delays, names, "iolab's own delay in every run")
			}})
	}
	if p.secondsMetric != "" {
		plots = append(plots,
			plotSpec{"timeline", "Every full second of every measured run at its time in the experiment.",
				func() (figure, error) {
					return secondsPlot(p.secondsMetric, "", "every second of every measured run", p.ops, names)
				}},
			plotSpec{"timeline-p99", "The p99 latency of each of those seconds.",
				func() (figure, error) {
					return secondsPlot("lat_p99_ns", "p99 latency", "p99 latency of each second", p.p99, names)
				}})
	}
	return plots
}

// summaryRows are a variant's rows of a cell's table: its median of the
// cell's metric and, per direction (read, write ...), the latency
// percentiles — and when there are several directions, a row for the
// whole, then each direction with its own share of the metric
// (read.ops_per_s), never the whole's figure again.
func summaryRows(cv analysis.CellView, metric string) []htmlSummary {
	format := metricFormatter(metric)
	whole := htmlSummary{Variant: variantLabel(cv.Variant), Runs: cv.Measured,
		Median: cellMedian(cv, metric, format), CV: fmt.Sprintf("%.1f%%", 100*cv.Summary[metric].CV)}
	dirs := slices.Sorted(maps.Keys(cv.Hist))
	withLatency := func(row htmlSummary, d string) htmlSummary {
		lat := cv.Latency[d]
		row.P50, row.P99, row.P999 = latency(float64(lat.P50)), latency(float64(lat.P99)), latency(float64(lat.P999))
		return row
	}
	switch len(dirs) {
	case 0:
		return []htmlSummary{whole}
	case 1:
		return []htmlSummary{withLatency(whole, dirs[0])}
	}
	rows := []htmlSummary{whole}
	for _, d := range dirs {
		row := htmlSummary{Variant: variantLabel(cv.Variant) + " " + d, Runs: cv.Measured, Median: "—", CV: "—"}
		if s, ok := cv.Summary[d+"."+metric]; ok {
			row.Median, row.CV = medianCI(s, format), fmt.Sprintf("%.1f%%", 100*s.CV)
		}
		rows = append(rows, withLatency(row, d))
	}
	return rows
}

// plotSpec is a plot of a cell to draw: its kind, caption and drawing.
type plotSpec struct {
	kind, caption string
	draw          func() (figure, error)
}

// appendFigure appends f when it drew something.
func appendFigure(fs []figure, f figure) []figure {
	if f.SVG == "" {
		return fs
	}
	return append(fs, f)
}

// fullSeconds are the seconds a run lasted the whole of: the last,
// partial second's count is not a rate.
func fullSeconds(run analysis.RunView) []metrics.Second {
	var out []metrics.Second
	for _, s := range run.Series {
		if float64(s.T+1) <= run.DurationS+0.01 {
			out = append(out, s)
		}
	}
	return out
}

func metricFormatter(metric string) func(float64) string {
	_, f := metricFormat(metric)
	return f
}

// chosenRun is the run whose seconds the report draws: id when it is one
// of r's, else of the measured runs that lasted two seconds or more the
// one furthest from its variant's median; nil when there is none.
func chosenRun(r *analysis.Report, id int64, variants []string) (*htmlRun, error) {
	var pick *analysis.RunView
	why := ""
	for i := range r.Runs {
		if id != 0 && r.Runs[i].ID == id {
			pick, why = &r.Runs[i], "chosen with --run"
		}
	}
	if pick == nil {
		worst := -1.0
		for i := range r.Runs {
			run := &r.Runs[i]
			if !measured(*run) || len(fullSeconds(*run)) < 2 {
				continue // nothing to draw second by second
			}
			metric := ""
			var med float64
			for _, c := range r.Cells {
				if c.Name == run.Cell && c.Variant == run.Variant {
					metric = analysis.PrimaryMetric(c.Workload)
					med = c.Summary[metric].Median
				}
			}
			v := run.Metrics[metric]
			if v <= 0 || med <= 0 {
				continue
			}
			if d := math.Abs(math.Log(v / med)); d > worst {
				worst, pick = d, run
				why = fmt.Sprintf("of the runs with seconds to draw, the one furthest from its variant's median (%+.1f%%); --run ID draws another", 100*(v/med-1))
			}
		}
	}
	if pick == nil {
		return nil, nil
	}
	vi := slices.Index(variants, pick.Variant)
	out := &htmlRun{ID: pick.ID, Cell: pick.Cell, Variant: variantLabel(pick.Variant), Why: why, Round: pick.Round,
		Start: pick.Start.Local().Format("2006-01-02 15:04:05")}
	var ops, p99 []float64
	for _, s := range fullSeconds(*pick) {
		ops = append(ops, float64(s.Ops))
		p99 = append(p99, float64(s.P99Ns))
	}
	rss, cpu := serverSeconds(pick.ServerSeries)
	for _, pl := range []struct {
		kind, metric, label, title string
		values                     []float64
	}{
		{"run-ops", "ops_per_s", "", "operations per second", ops},
		{"run-p99", "lat_p99_ns", "p99 latency", "p99 latency per second", p99},
		{"server-rss", "server_rss_bytes", "RSS", "the server's memory (RSS) per second", rss},
		{"server-cpu", "server_cpu_s", "CPU s/s", "the server's CPU seconds per second", cpu},
	} {
		f, err := runSecondsPlot(pl.metric, pl.label, pl.title, pl.values, vi)
		if err != nil {
			return nil, fmt.Errorf("%s plot: %w", pl.kind, err)
		}
		f.Kind = pl.kind
		out.Plots = appendFigure(out.Plots, f)
	}
	return out, nil
}

// serverSeconds are the server's memory and CPU of each second as drawn:
// each second's CPU is already that second's (observe measures it so),
// not a running total to take differences of.
func serverSeconds(series []metrics.ServerSecond) (rss, cpu []float64) {
	for _, s := range series {
		rss = append(rss, float64(s.RSSBytes))
		cpu = append(cpu, s.CPUS)
	}
	return rss, cpu
}

// htmlHistories groups the histories of one cell and metric (one per
// variant) into one plot and table.
func htmlHistories(hs []analysis.HistoryView) ([]htmlHistory, error) {
	// One section a cell: its primary metric's rows and plot, and the
	// plot of each other metric (a latency) beside it.
	var keys []string
	groups := map[string]map[string][]analysis.HistoryView{}
	metricsOf := map[string][]string{}
	for _, h := range hs {
		k := h.Workload + "\x00" + formatParams(h.Params)
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
			groups[k] = map[string][]analysis.HistoryView{}
		}
		if _, ok := groups[k][h.Metric]; !ok {
			metricsOf[k] = append(metricsOf[k], h.Metric)
		}
		groups[k][h.Metric] = append(groups[k][h.Metric], h)
	}
	var out []htmlHistory
	for _, k := range keys {
		ms := metricsOf[k] // the primary metric's first: its rows are the table
		if i := slices.Index(ms, analysis.PrimaryMetric(groups[k][ms[0]][0].Workload)); i > 0 {
			ms[0], ms[i] = ms[i], ms[0]
		}
		g := groups[k][ms[0]]
		label, format := metricFormat(g[0].Metric)
		hh := htmlHistory{Title: fmt.Sprintf("%s (%s %s): %s", g[0].Cell, g[0].Workload, formatParams(g[0].Params), label)}
		for _, m := range ms {
			plot, err := historyPlot(m, groups[k][m])
			if err != nil {
				return nil, err
			}
			if plot.SVG != "" {
				plot.Kind = "history"
				hh.Plots = append(hh.Plots, plot)
			}
		}
		for _, h := range g {
			cps := map[int]string{}
			for _, cp := range h.ChangePoints {
				cps[cp.Index] = "change point: " + changePointText(h, cp)
			}
			for i, s := range h.Steps {
				row := htmlHistoryRow{Variant: variantLabel(h.Variant), Experiment: s.Experiment, Date: s.At.Local().Format("2006-01-02 15:04"),
					Runs: s.Summary.N, Median: medianCI(s.Summary, format), Notes: s.Notes, Change: cps[i]}
				if p := s.Previous; p != nil {
					row.Previous, row.Verdict = estimate(*p, format), p.Verdict
				}
				if len(s.Changes) > 0 {
					row.Changes = changesText(s.Changes)
				}
				hh.Rows = append(hh.Rows, row)
			}
			if h.Reason != "" {
				hh.Foot = h.Reason
			} else if hh.Foot == "" {
				hh.Foot = "change points by " + h.Method
			}
		}
		out = append(out, hh)
	}
	return out, nil
}

// cellParams are a cell's parameters as its variants share them, then
// those a variant sets apart (its vars:, its limits) with each one's value.
func cellParams(r *analysis.Report, name string) string {
	var views []analysis.CellView
	for _, cv := range r.Cells {
		if cv.Name == name {
			views = append(views, cv)
		}
	}
	if len(views) == 0 {
		return ""
	}
	shared := map[string]string{}
	var differ []string
	for k, v := range views[0].Params {
		same := true
		for _, o := range views[1:] {
			if o.Params[k] != v {
				same = false
			}
		}
		if same {
			shared[k] = v
		} else {
			differ = append(differ, k)
		}
	}
	for _, o := range views[1:] {
		for k := range o.Params {
			if _, ok := views[0].Params[k]; !ok && !slices.Contains(differ, k) {
				differ = append(differ, k)
			}
		}
	}
	out := formatParams(shared)
	slices.Sort(differ)
	for _, k := range differ {
		var each []string
		for _, v := range views {
			each = append(each, variantLabel(v.Variant)+" "+v.Params[k])
		}
		out += fmt.Sprintf("; %s by variant: %s", k, strings.Join(each, ", "))
	}
	return out
}
