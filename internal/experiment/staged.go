package experiment

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/plan"
	"github.com/iolab/iolab/internal/workload"
)

// runSetup runs the cell's setup step once, untimed, and writes its
// outputs to the {{ids}} file.
func (c *cellBuilder) runSetup(ctx context.Context) error {
	step := fmt.Sprintf("variant %s: workload %q: setup (%s)", c.v.Name, c.w.Name, c.w.Setup.Kind)
	wl, _, err := c.build(*c.w.Setup, true)
	if err != nil {
		return fmt.Errorf("%s: %w", step, err)
	}
	defer wl.Close()
	if err := wl.Prepare(ctx); err != nil {
		return fmt.Errorf("%s: %w", step, err)
	}
	// Untimed and unrecorded: its seconds are not the run's.
	res, err := wl.Run(metrics.WithSecondSink(ctx, nil, 0), nil)
	switch {
	case err != nil:
		return fmt.Errorf("%s: %w", step, err)
	case res != nil && res.Errors > 0:
		return fmt.Errorf("%s: %d operations failed; the first: %s", step, res.Errors, res.FirstError)
	}
	var lines []string
	if o, ok := wl.(workload.Outputter); ok {
		lines = o.Outputs()
	}
	if len(lines) == 0 && workloadUses(c.w, "ids") {
		return fmt.Errorf("%s: handed on no ids for {{ids}}; an http upload hands on what --id-from-json names in each reply (else each upload's index), an s3 run with keep: true the keys it wrote, a cmd the lines it prints", step)
	}
	tmp := c.ids + ".tmp"
	if err := os.WriteFile(tmp, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		return fmt.Errorf("%s: %w", step, err)
	}
	return os.Rename(tmp, c.ids)
}

// stagedWorkload is a cell's workload built anew each time it is
// prepared: after its setup step ran and, against a variant's server,
// with the port of that start.
type stagedWorkload struct {
	first workload.Workload // built with the plan: its kind
	// params are first's, with the port of a start shown as {{port}}:
	// every start has its own.
	params map[string]string
	c      *cellBuilder
	cur    workload.Workload
	last   workload.Workload // the one the last run used, for its manifest
}

func (s *stagedWorkload) Kind() string              { return s.first.Kind() }
func (s *stagedWorkload) Params() map[string]string { return s.params }

// Prepare runs the setup step, then builds and prepares the workload.
func (s *stagedWorkload) Prepare(ctx context.Context) error {
	if l := s.c.load; l != nil && !l.flatOut() && l.flat.res == nil {
		return uncalibrated(s.c)
	}
	if s.c.w.Setup != nil {
		if err := s.c.runSetup(ctx); err != nil {
			return err
		}
	}
	wl, _, err := s.c.build(s.c.w, false)
	if err != nil {
		return err
	}
	if err := wl.Prepare(ctx); err != nil {
		_ = wl.Close()
		return err
	}
	s.cur, s.last = wl, wl
	return nil
}

func (s *stagedWorkload) Run(ctx context.Context, progress func(ops, bytes int64)) (*metrics.Result, error) {
	if s.cur == nil {
		return nil, errors.New("workload not prepared")
	}
	offered := 0.0
	if l := s.c.load; l != nil && !l.flatOut() {
		// Before a search moves on; this segment's part of the load's.
		offered = s.c.seg.Rate(l.share() * l.flat.rate())
	}
	res, err := s.cur.Run(ctx, progress)
	if res != nil && offered > 0 {
		if res.Extra == nil {
			res.Extra = map[string]float64{}
		}
		res.Extra["offered_ops_per_s"] = offered
	}
	return res, err
}

func (s *stagedWorkload) Close() error {
	if s.cur == nil {
		return nil
	}
	err := s.cur.Close()
	s.cur = nil
	return err
}

// Manifest implements workload.Manifester for a workload that leaves
// objects (s3 --keep).
func (s *stagedWorkload) Manifest() (uint64, []workload.Object) {
	if m, ok := s.last.(workload.Manifester); ok {
		return m.Manifest()
	}
	return 0, nil
}

// Gate implements workload.Gater for a workload with a criterion.
func (s *stagedWorkload) Gate(res *metrics.Result) error {
	if g, ok := s.last.(workload.Gater); ok {
		return g.Gate(res)
	}
	return nil
}

func sortedKeys(m map[string]plan.Value) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
