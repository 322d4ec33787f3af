package analysis

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/iolab/iolab/internal/history"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/stats"
	"github.com/iolab/iolab/internal/store"
	"github.com/iolab/iolab/internal/workload"
)

// HistoryView is one metric of one cell of one variant across
// experiments, oldest first.
type HistoryView struct {
	// Cell is the cell's name in the newest experiment; Params the
	// parameters that make it the same cell in every experiment.
	Cell          string            `json:"cell"`
	Workload      string            `json:"workload"`
	Params        map[string]string `json:"params"`
	Variant       string            `json:"variant,omitempty"`
	Metric        string            `json:"metric"`
	LowerIsBetter bool              `json:"lower_is_better"`
	history.Analysis
	identity string // cellIdentity's key
}

// placeParams say where a cell ran, not what it ran: the same study on
// another temp dir or port is the same cell. An endpoint's host shows
// among the facts that changed.
var placeParams = map[string]bool{"directory": true, "filename": true, "url": true, "url-file": true, "endpoint": true,
	"bucket": true, "id-file": true}

// cellIdentity is what makes a cell the same across experiments: its
// variant, workload and parameters but for where it ran.
func cellIdentity(c store.Cell) (string, map[string]string) {
	p := map[string]string{}
	for k, v := range c.Params {
		if !placeParams[k] {
			p[k] = v
		}
	}
	key, _ := json.Marshal(p) // maps marshal with sorted keys
	return c.Variant + "\x00" + c.Workload + "\x00" + string(key), p
}

// CellFilter chooses cells by terms that all must hold: KEY=VALUE (a
// parameter, or workload=, variant=, cell=) or a word found in the cell's
// name or workload.
type CellFilter []string

// Match says whether c passes the filter.
func (f CellFilter) Match(c store.Cell) bool {
	for _, term := range f {
		if k, v, ok := strings.Cut(term, "="); ok {
			got, known := c.Params[k]
			switch k {
			case "workload": // its kind, or the plan's name of it (a cell's name starts with it)
				got, known = c.Workload, true
				if name, _, _ := strings.Cut(c.Name, " "); name == v {
					got = v
				}
			case "variant":
				got, known = c.Variant, true
			case "cell", "name":
				got, known = c.Name, true
			}
			if !known || got != v {
				return false
			}
			continue
		}
		if !strings.Contains(c.Name, term) && !strings.Contains(c.Workload, term) && c.Variant != term {
			return false
		}
	}
	return true
}

// BuildHistory lines up, for every cell that passes filter, metric (each
// workload's primary metric when empty) across the experiments (oldest
// first), and analyses each series; threshold is the practical difference
// (DefaultThreshold when 0).
func BuildHistory(exps []*store.Data, filter CellFilter, metric string, threshold float64) []HistoryView {
	if threshold <= 0 {
		threshold = DefaultThreshold
	}
	type series struct {
		view   HistoryView
		desc   stats.Metric
		points []history.Point
	}
	var order []string
	byKey := map[string]*series{}
	dm := derivedMetrics{}
	for _, d := range exps {
		facts := experimentFacts(d)
		perCell := map[int64][]store.Run{}
		for _, r := range d.Runs {
			perCell[r.CellID] = append(perCell[r.CellID], r)
		}
		for _, c := range d.Cells {
			if !filter.Match(c) {
				continue
			}
			m := metric
			if m == "" {
				m = PrimaryMetric(c.Workload)
			}
			if Searched(c) && metric == "" {
				m = SustainedMetric
			}
			def, known := metrics.Describe(m)
			desc, known := def.Stat(), known && def.Judged()
			if lower, custom := facts.custom[m]; custom && !known {
				desc, known = stats.Metric{LowerIsBetter: lower}, true
			}
			var v []float64
			notes := append(noteTexts(d.Experiment.Notes), lostLater(d, c)...)
			switch {
			case m == SustainedMetric:
				var found string
				if v, found = sustained(dm, d, perCell, c); found != "" {
					notes = append(notes, found)
				}
			case !Searched(c): // a search's runs are at loads of their own
				v = values(dm, perCell[c.ID], m)
			}
			if len(v) == 0 || !known {
				continue // no runs, or no way to tell better from worse
			}
			key, params := cellIdentity(c)
			key += "\x00" + m
			s := byKey[key]
			if s == nil {
				s = &series{view: HistoryView{Workload: c.Workload, Params: params, Variant: c.Variant, Metric: m, LowerIsBetter: desc.LowerIsBetter,
					identity: strings.TrimSuffix(key, "\x00"+m)}, desc: desc}
				byKey[key] = s
				order = append(order, key)
			}
			s.view.Cell = c.Name
			f := maps.Clone(facts.common)
			if commit := facts.commits[c.Variant]; commit != "" {
				f["commit"] = commit
			}
			maps.Copy(f, facts.setups[c.Variant])
			if where := placeOf(c); where != "" {
				f["target"] = where
			}
			s.points = append(s.points, history.Point{Experiment: d.Experiment.ID, At: d.Experiment.CreatedAt, Values: v,
				Notes: notes, Facts: f})
		}
	}
	out := []HistoryView{}
	for _, k := range order {
		s := byKey[k]
		s.view.Analysis = history.Analyze(s.points, s.desc, threshold)
		out = append(out, s.view)
	}
	return out
}

// HistoriesFor are the histories across all of the cells of the
// experiments in of, where a cell ran in more than one experiment.
func HistoriesFor(all, of []*store.Data, threshold float64) []HistoryView {
	want := map[string]bool{}
	for _, d := range of {
		for _, c := range d.Cells {
			key, _ := cellIdentity(c)
			want[key] = true
		}
	}
	var out []HistoryView
	kinds := map[string]bool{}
	for _, h := range BuildHistory(all, nil, "", threshold) {
		if want[h.identity] && len(h.Steps) > 1 {
			out = append(out, h)
			kinds[h.Workload] = true
		}
	}
	// Beside each, its latency: the first p99 its kind compares that the
	// cell measured (a write-only cell has no read latency).
	drawn := map[string]bool{}
	for _, kind := range slices.Sorted(maps.Keys(kinds)) {
		k, _ := workload.Lookup(kind)
		for _, m := range k.Metrics {
			if !strings.HasSuffix(m, "lat_p99_ns") {
				continue
			}
			for _, h := range BuildHistory(all, CellFilter{"workload=" + kind}, m, threshold) {
				if want[h.identity] && len(h.Steps) > 1 && !drawn[h.identity] && h.Workload == kind {
					drawn[h.identity] = true
					out = append(out, h)
				}
			}
		}
	}
	return out
}

func noteTexts(notes []store.Note) []string {
	var out []string
	for _, n := range notes {
		out = append(out, n.Text)
	}
	return out
}

// lostLater says, for history, what later checks of the cell's kept
// objects found not as written: a loss found after the runs is part of
// the experiment's record.
func lostLater(d *store.Data, c store.Cell) []string {
	var out []string
	for _, v := range d.Verifies {
		if v.CellID == c.ID && v.Mismatched+v.Missing+v.Unreadable > 0 {
			out = append(out, fmt.Sprintf("%s at %s: of %d objects, %d differ, %d missing, %d unreadable", v.By, v.At.UTC().Format(time.RFC3339),
				v.Checked, v.Mismatched, v.Missing, v.Unreadable))
		}
	}
	return out
}

// placeOf is the host a network workload measured (scheme://host:port;
// never a path or query, which may carry tokens).
func placeOf(c store.Cell) string {
	for _, k := range []string{"endpoint", "url"} {
		if u, err := url.Parse(c.Params[k]); err == nil && u.Host != "" {
			return u.Scheme + "://" + u.Host
		}
	}
	return ""
}

// experimentFacts are what may explain a change between experiments:
// the machine, the target, iolab's version, each variant's commit.
type expFacts struct {
	common  map[string]string
	commits map[string]string
	// setups are each variant's env, limits, build and start.
	setups map[string]map[string]string
	// custom are the metrics the plan's commands print, lower is better
	// or not.
	custom map[string]bool
}

func experimentFacts(d *store.Data) expFacts {
	f := expFacts{common: map[string]string{}}
	if rec, ok := d.Experiment.PlanRecord(); ok {
		f.commits, f.setups, f.custom = rec.Commits, rec.Setups, rec.Custom
	}
	snaps := decodeEnv(d.Env)
	if len(snaps) == 0 {
		return f
	}
	s := snaps[0]
	f.common["host"] = s.Hostname
	f.common["kernel"] = s.Kernel
	f.common["cpu"] = fmt.Sprintf("%s x%d", s.CPUModel, s.CPUs)
	if s.MemTotalBytes > 0 {
		f.common["memory"] = metrics.FormatBytes(float64(s.MemTotalBytes))
	}
	v := s.IolabVersion
	if s.IolabCommit != "" {
		v += " (" + s.IolabCommit + ")"
	}
	f.common["iolab"] = v
	if t := s.Target; t != nil {
		disk := strings.TrimSpace(strings.Join([]string{t.Device, t.Model}, " "))
		if t.FSType != "" {
			disk += " " + t.FSType
		}
		f.common["disk"] = strings.TrimSpace(disk)
	}
	return f
}
