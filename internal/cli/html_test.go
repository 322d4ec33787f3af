package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// browserPage is what a page shows once Chromium has loaded it.
type browserPage struct {
	// Plots counts, per data-plot kind, the figures whose SVG was laid
	// out at least 200x100 pixels and holds drawn paths.
	Plots       map[string]int `json:"plots"`
	Scripts     int            `json:"scripts"`
	Pwned       bool           `json:"pwned"`
	Text        string         `json:"text"`
	HeadingBold int            `json:"headingBold"`
	HistoryRows int            `json:"historyRows"`
	MatrixCells int            `json:"matrixCells"`
	// Problems are console errors, exceptions, failed loads and requests
	// for anything but the file itself.
	Problems []string `json:"-"`
}

// chromiumTab starts Debian's headless Chromium (a window of 1400x1000)
// for at most two minutes and opens a tab in it; done ends both.
func chromiumTab(t *testing.T, opts ...chromedp.ContextOption) (context.Context, func()) {
	t.Helper()
	need(t, "chromium")
	bin, _ := exec.LookPath("chromium")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	aopts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1400, 1000))
	actx, acancel := chromedp.NewExecAllocator(ctx, aopts...)
	bctx, bcancel := chromedp.NewContext(actx, opts...)
	return bctx, func() { bcancel(); acancel(); cancel() }
}

// loadInChromium opens path in headless Chromium (Debian's) and reports
// what it drew and every error it met.
func loadInChromium(t *testing.T, path string) browserPage {
	t.Helper()
	var mu sync.Mutex
	var problems []string
	url := "file://" + path
	// The listener sees every event from the tab's start (chromedp
	// enables the log and network domains on it).
	listen := func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+e.ExceptionDetails.Text)
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeWarning {
				problems = append(problems, fmt.Sprintf("console %s", e.Type))
			}
		case *cdplog.EventEntryAdded:
			if e.Entry.Level == cdplog.EntryLevelError || e.Entry.Level == cdplog.EntryLevelWarning {
				problems = append(problems, fmt.Sprintf("log %s: %s", e.Entry.Level, e.Entry.Text))
			}
		case *network.EventRequestWillBeSent:
			if e.Request.URL != url {
				problems = append(problems, "request: "+e.Request.URL)
			}
		case *network.EventLoadingFailed:
			problems = append(problems, "load failed: "+e.ErrorText)
		}
	}
	bctx, done := chromiumTab(t, chromedp.WithListener(listen))
	defer done()
	err := chromedp.Do(bctx, chromedp.Navigate(url), chromedp.WaitReady("body"))
	var page browserPage
	if err == nil {
		page, err = chromedp.Run(bctx, chromedp.Evaluate[browserPage](`(() => {
			const plots = {};
			for (const f of document.querySelectorAll('figure.plot')) {
				const svg = f.querySelector('svg');
				if (!svg) continue;
				const r = svg.getBoundingClientRect();
				if (r.width >= 200 && r.height >= 100 && svg.querySelectorAll('path').length > 10)
					plots[f.dataset.plot] = (plots[f.dataset.plot] || 0) + 1;
			}
			return {plots, scripts: document.scripts.length, pwned: typeof window.pwned !== 'undefined',
				text: document.body.innerText, headingBold: document.querySelectorAll('h2 b').length,
				historyRows: document.querySelectorAll('#history tr').length,
				matrixCells: document.querySelectorAll('table.matrix td').length};
		})()`))
	}
	if err != nil {
		t.Fatalf("chromium on %s: %v", path, err)
	}
	mu.Lock()
	page.Problems = problems
	mu.Unlock()
	return page
}

// The HTML report of a study with two variants (one named to inject a
// script), a per-second fs workload and a scale sweep, after two earlier
// experiments of the sweep: Chromium draws every kind of plot, runs no
// script, fetches nothing and logs no error; user text shows as text.
//
// Not parallel: Chromium takes every CPU for seconds, which would skew
// the timings of the tests that measure.
func TestHTMLReportInChromium(t *testing.T) {
	slow(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "r.db")
	const hostile = "<script>window.pwned=1</script>"
	variants := `variants:
  - name: base
    env: {MODE: a}
  - name: "` + hostile + `"
    env: {MODE: b}
`
	grow := `  - name: grow
    cmd: {run: "awk -v n={{n}} 'BEGIN { for (i = 0; i < n; i++) s += i }'"}
    scale: {n: [10000, 100000, 1000000]}
`
	writeFiles(t, dir, map[string]string{
		"sweep.yaml": "name: sweep\nrounds: 3\nwarmup: 0\n" + variants + "workloads:\n" + grow,
		"study.yaml": "name: report <b>study</b>\nrounds: 3\nwarmup: 0\n" + variants + `workloads:
  - name: disk
    fs: {directory: "{{tmp}}", size: 4m, rw: randread, runtime: 2.2s}
` + grow,
	})
	for i := range 2 {
		if _, err := runPlan(t, context.Background(), filepath.Join(dir, "sweep.yaml"), "--db", db, "--json", "--note", fmt.Sprintf("nightly %d <i>", i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := runPlan(t, context.Background(), filepath.Join(dir, "study.yaml"), "--db", db, "--json"); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "report.html")
	stdout, _, err := iolab(t, context.Background(), "report", "--db", db, "-o", out)
	if err != nil || !strings.HasPrefix(stdout, "wrote "+out) {
		t.Fatalf("iolab report: %v\n%s", err, stdout)
	}
	html, _ := os.ReadFile(out)
	if strings.Contains(string(html), hostile) || strings.Contains(string(html), "<b>study</b>") {
		t.Errorf("a user string reached the page unescaped")
	}
	for _, external := range []string{"http://", "https://"} {
		for _, line := range strings.Split(string(html), "\n") {
			if strings.Contains(line, external) && !strings.Contains(line, "http://www.w3.org/") {
				t.Errorf("the page refers to %s: %.200s", external, line)
			}
		}
	}

	page := loadInChromium(t, out)
	if len(page.Problems) > 0 {
		t.Errorf("Chromium met problems: %q", page.Problems)
	}
	if page.Scripts != 0 || page.Pwned || page.HeadingBold != 0 {
		t.Errorf("scripts %d, pwned %v, bold in headings %d: want none", page.Scripts, page.Pwned, page.HeadingBold)
	}
	for _, want := range []string{hostile, "report <b>study</b>", "nightly 1 <i>", "Verdicts against base"} {
		if !strings.Contains(page.Text, want) {
			t.Errorf("the page's text lacks %q", want)
		}
	}
	// Per cell: runs, latency, run order; the fs cell its seconds; one run
	// second by second; the scale fits; the sweep's history.
	wants := map[string]int{"strip": 4, "cdf": 1, "run-order": 4, "timeline": 1, "timeline-p99": 1, "run-ops": 1, "run-p99": 1, "scale": 2, "history": 3}
	for kind, n := range wants {
		if page.Plots[kind] < n {
			t.Errorf("%d %s plots drawn, want %d or more (all: %v)", page.Plots[kind], kind, n, page.Plots)
		}
	}
	_, _, err = iolab(t, context.Background(), "report", "--db", db, "-o", filepath.Join(dir, "x.html"), "--run", "999999")
	var ue *UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--run 999999") || fileExists(filepath.Join(dir, "x.html")) {
		t.Errorf("--run of no run: %v, want a usage error naming the flag, and no file", err)
	}
	// The verdict matrix: the one variant against the baseline, in each
	// of the 4 cells.
	if page.MatrixCells != 4 {
		t.Errorf("verdict matrix of %d cells, want 4", page.MatrixCells)
	}
	// The history of each grow cell of each variant: 3 experiments.
	if page.HistoryRows < 3*3*2 {
		t.Errorf("history table rows %d, want 3 experiments x 3 scales x 2 variants", page.HistoryRows)
	}
}
