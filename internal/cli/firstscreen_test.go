package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// firstScreen is what a 1400x1000 window shows of a report before any
// scrolling, as Chromium lays it out.
type firstScreen struct {
	Answers       []string `json:"answers"`       // the answer lines, wholly on the first screen
	AnswersBelow  int      `json:"answersBelow"`  // answer lines that are not
	AnswerOf      string   `json:"answerOf"`      // the line above them
	MatrixTop     float64  `json:"matrixTop"`     // where the verdict table begins
	MatrixBottom  float64  `json:"matrixBottom"`  // and ends
	MatrixRows    int      `json:"matrixRows"`    // its rows, header included
	PageWidth     float64  `json:"pageWidth"`     // the document's width: over 1400 is a sideways scroll
	HistoryTitles []string `json:"historyTitles"` // each history plot's title
	HistoryTicks  []string `json:"historyTicks"`  // the labels under the history's experiments
	HistoryPlots  int      `json:"historyPlots"`  // history plots drawn
	HistoryInView bool     `json:"historyInView"` // the history section was scrolled to
}

// screenOf loads a report in headless Chromium at 1400x1000 and reads its
// first screen; with $IOLAB_SCREENSHOTS set, it saves the first screen (or
// the history section) there as name.png, for docs/.
func screenOf(t *testing.T, path, name string, history bool) firstScreen {
	t.Helper()
	bctx, done := chromiumTab(t)
	defer done()
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(1400, 1000), chromedp.Navigate("file://"+path), chromedp.WaitReady("body")); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	if history {
		if _, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`(document.querySelector('#history').scrollIntoView(true), true)`)); err != nil {
			t.Fatalf("chromium: scroll to the history: %v", err)
		}
	}
	s, err := chromedp.Run(bctx, chromedp.Evaluate[firstScreen](`(() => {
		const h = window.innerHeight, out = {answers: [], answersBelow: 0, historyTitles: [], historyTicks: []};
		for (const li of document.querySelectorAll('ul.answers li')) {
			const r = li.getBoundingClientRect();
			if (r.top >= 0 && r.bottom <= h) out.answers.push(li.innerText); else out.answersBelow++;
		}
		const of = document.querySelector('p.answer-of'); out.answerOf = of ? of.innerText : '';
		const m = document.querySelector('table.matrix');
		if (m) { const r = m.getBoundingClientRect(); out.matrixTop = r.top; out.matrixBottom = r.bottom; out.matrixRows = m.rows.length; }
		out.pageWidth = document.documentElement.scrollWidth;
		const figs = document.querySelectorAll('#history figure.plot[data-plot=history]');
		out.historyPlots = figs.length;
		for (const f of figs) {
			const texts = [...f.querySelectorAll('svg text')].map(x => x.textContent);
			out.historyTitles.push(texts.find(x => x.startsWith('median')) || '');
			out.historyTicks.push(...texts);
		}
		const hs = document.querySelector('#history');
		out.historyInView = !!hs && hs.getBoundingClientRect().top < h;
		return out;
	})()`))
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	if dir := os.Getenv("IOLAB_SCREENSHOTS"); dir != "" {
		png, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644)
		}
		if err != nil {
			t.Errorf("screenshot %s: %v", name, err)
		}
	}
	return s
}

// The HTML report answers on its first screen, as a reader sees it in a
// 1400x1000 window: a two-variant study's answer in words — the metric,
// which way is better, by how much — and its verdict table; a 36-cell
// study's answer in a line a variant and the top of its verdict table,
// which reads down the page, never sideways; an 11-experiment history
// with a 15x drop on a log axis, its experiments named by their notes.
//
// Not parallel: Chromium takes every CPU for seconds.
func TestReportFirstScreen(t *testing.T) {
	slow(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	cells := make([]string, 36)
	for i := range cells {
		cells[i] = fmt.Sprint(i + 1)
	}
	writeFiles(t, dir, map[string]string{
		"two.yaml": `name: two variants
rounds: 6
warmup: 0
variants:
  - {name: quick, vars: {pause: "0.05"}}
  - {name: slow, vars: {pause: "0.08"}}
workloads:
  - name: nap
    cmd: {run: "sleep {{pause}}"}
    matrix: {size: [1, 2]}
`,
		"wide.yaml": `name: thirty-six cells
rounds: 3
warmup: 0
variants:
  - {name: a, vars: {extra: ""}}
  - {name: b, vars: {extra: "x"}}
workloads:
  - name: c
    cmd: {run: "true {{extra}} {{n}}"}
    matrix: {n: [` + strings.Join(cells, ", ") + `]}
`,
		"night.yaml": `name: nightly
rounds: 3
warmup: 0
workloads:
  - name: restore
    cmd: {run: "sleep $(cat ` + filepath.Join(dir, "delay") + `)"}
`,
	})
	s := screenOf(t, runAndReport(t, dir, db, "two"), "report-first-screen", false)
	if len(s.Answers) != 2 || s.AnswersBelow != 0 || s.AnswerOf != "The answer (wall time, lower is better; each variant against quick):" {
		t.Errorf("two variants: answers %q (%d below the first screen), above them %q", s.Answers, s.AnswersBelow, s.AnswerOf)
	}
	// Which way, by how much, how sure: "slow: 58% more wall time than
	// quick [51%, 66%], slower" (a loaded machine may leave one
	// inconclusive, or withhold it while a side still warms up: then it
	// says so, and where the estimate is).
	answer := regexp.MustCompile(`^nap size=[12] — slow: ((\d+(\.\d)?% (more|less) wall time than quick \[|[0-9.]+x the wall time of quick \[).*\], (slower|faster|same|inconclusive)|wall time against quick: no answer, inconclusive \(withheld: a side is still warming up, see the warnings\); the estimate is in the table below, unjudged$)`)
	for _, a := range s.Answers {
		if !answer.MatchString(a) {
			t.Errorf("an answer that does not say which way, by how much and how sure: %q", a)
		}
	}
	if s.MatrixRows != 3 || s.MatrixBottom > 1000 || s.PageWidth > 1400 {
		t.Errorf("two variants: the verdict table (%d rows) ends at %.0f px of 1000; the page is %.0f px wide", s.MatrixRows, s.MatrixBottom, s.PageWidth)
	}

	s = screenOf(t, runAndReport(t, dir, db, "wide"), "report-36-cells", false)
	if len(s.Answers) != 1 || !strings.HasPrefix(s.Answers[0], "b: ") || !strings.Contains(s.Answers[0], " of 36 cells") {
		t.Errorf("36 cells: answers %q", s.Answers)
	}
	if s.MatrixRows != 37 || s.MatrixTop > 1000 || s.PageWidth > 1400 {
		t.Errorf("36 cells: the verdict table has %d rows, begins at %.0f px; the page is %.0f px wide", s.MatrixRows, s.MatrixTop, s.PageWidth)
	}

	for i := range 11 {
		delay := "0.3"
		if i >= 6 {
			delay = "0.02" // a 15x drop at VM-7
		}
		if err := os.WriteFile(filepath.Join(dir, "delay"), []byte(delay), 0o644); err != nil {
			t.Fatal(err)
		}
		if i < 10 {
			if _, err := runPlan(t, context.Background(), filepath.Join(dir, "night.yaml"), "--db", db, "--json", "--note", fmt.Sprintf("VM-%d", i+1)); err != nil {
				t.Fatal(err)
			}
		}
	}
	s = screenOf(t, runAndReport(t, dir, db, "night", "--note", "VM-11"), "report-history", true)
	ticks := strings.Join(s.HistoryTicks, "|")
	if s.HistoryPlots < 1 || !s.HistoryInView || !strings.Contains(strings.Join(s.HistoryTitles, "|"), "(log scale)") ||
		!strings.Contains(ticks, "|VM-7|") || !strings.Contains(ticks, "|VM-11|") {
		t.Errorf("history: %d plots, titles %q, labels %q", s.HistoryPlots, s.HistoryTitles, s.HistoryTicks)
	}
}

// runAndReport runs dir/plan.yaml into db and writes the newest
// experiment's report, whose path it returns.
func runAndReport(t *testing.T, dir, db, plan string, args ...string) string {
	t.Helper()
	if _, err := runPlan(t, context.Background(), append([]string{filepath.Join(dir, plan+".yaml"), "--db", db, "--json"}, args...)...); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, plan+".html")
	if _, _, err := iolab(t, context.Background(), "report", "--db", db, "-o", page); err != nil {
		t.Fatal(err)
	}
	return page
}
