package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/iolab/iolab/internal/analysis"
	"github.com/iolab/iolab/internal/bisectrun"
	"github.com/iolab/iolab/internal/experiment"
	"github.com/iolab/iolab/internal/flagval"
	"github.com/iolab/iolab/internal/outpath"
	"github.com/iolab/iolab/internal/plan"
	"github.com/iolab/iolab/internal/report"
	"github.com/iolab/iolab/internal/stats"
	"github.com/iolab/iolab/internal/variant"
)

// bisectOptions are the flags of `iolab bisect PLAN --good REF --bad REF`.
type bisectOptions struct {
	bisectrun.Options
	threshold, HTML, ports string
	JSON, Quiet            bool
}

func newBisectCommand(stdout, stderr io.Writer) *cobra.Command {
	var o bisectOptions
	cmd := &cobra.Command{
		Use:   "bisect PLAN.yaml --good REF --bad REF",
		Short: "Find the commit that changed a metric: a bisection of a git range, each step decided by the statistics",
		Long: `Bisect the plan's git variant between a good and a bad commit. First the two ends are
compared in interleaved rounds until they are shown to differ (or not: then it says so and
stops). Then each step builds the commit in the middle of the interval left (builds are kept by
commit) and runs it in randomized interleaved rounds with the interval's two ends, until its
place is decided — like good, like bad, or in between (a partial step: both halves are searched)
— by intervals that stay valid however often they are looked at. A step still undecided after
--max-rounds leaves its interval ambiguous, said, not guessed; a commit that does not build is
skipped. The answer: the culprit commit (hash, subject, date) and its step with a 95% interval,
or each commit of a change spread over several with its share. Every step is stored as an
experiment; --resume continues a bisect cut short.`,
		Example: `  iolab bisect plan.yaml --good v1.4.0 --bad main
  iolab bisect plan.yaml --good HEAD~64 --bad HEAD --metric wall_s --first-parent`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBisect(cmd.Context(), args[0], o, commandLine(cmd)+" "+args[0], stdout, stderr)
		},
	}
	f := cmd.Flags()
	dbFlag(f, &o.DB)
	f.StringVar(&o.Good, "good", "", "a commit (or ref) with the old behaviour (required)")
	f.StringVar(&o.Bad, "bad", "", "a later commit (or ref) with the new behaviour (required)")
	f.StringVar(&o.Variant, "variant", "", "the plan's git variant to bisect (default: its only one)")
	f.StringVar(&o.Metric, "metric", "", "the metric to judge (default: the workload's primary metric)")
	f.StringVar(&o.threshold, "threshold", "2%", "the ends are the same when their difference is shown to lie within this")
	f.BoolVar(&o.FirstParent, "first-parent", false, "follow only the first parent of merges (a merge-heavy history: blame a merge, not a commit inside it)")
	f.BoolVar(&o.Resume, "resume", false, "continue the newest bisect of the same plan and range where it stopped")
	f.BoolVar(&o.JSON, "json", false, "print the answer as JSON")
	f.StringVar(&o.HTML, "html", "", "also write the answer to this file as an HTML page: the path of the steps over the commit range")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "no live progress line on the terminal")
	f.StringVar(&o.ports, "ports", "", "ports to hand variants' servers as {{port}} in every step, such as 25000-25999 (over the plan's ports:; default: any free port)")
	flagval.IntVar(f, &o.MinRounds, "min-rounds", stats.MinWarmupPairs, plan.MinSequentialRounds, plan.MaxRounds, "the rounds each step runs before it is first judged")
	flagval.IntVar(f, &o.MaxRounds, "max-rounds", 100, plan.MinSequentialRounds, plan.MaxRounds, "the most rounds a step runs before its commit is called ambiguous")
	return cmd
}

func runBisect(ctx context.Context, path string, o bisectOptions, command string, stdout, stderr io.Writer) error {
	if o.Good == "" || o.Bad == "" {
		return usage("--good and --bad are required: the commits (or refs) with the old and the new behaviour")
	}
	if o.MaxRounds < o.MinRounds {
		return usage("--max-rounds %d: want at least --min-rounds (%d)", o.MaxRounds, o.MinRounds)
	}
	var err error
	if o.Threshold, err = parseThreshold(o.threshold); err != nil {
		return err
	}
	if o.ports != "" {
		if _, err := plan.ParsePortRange(o.ports); err != nil {
			return usage("--ports %v", err)
		}
	}
	if o.HTML != "" {
		// Before hours of steps: iolab never overwrites a file it did not write.
		if err := outpath.Check("--html", o.HTML, report.IsPage); err != nil {
			return err
		}
	}
	text, err := plan.ReadFile(path)
	if err != nil {
		return usage("%s: %v", path, err)
	}
	// Each step is an experiment of the plan's text, run as iolab
	// experiment runs one.
	runStep := func(ctx context.Context, text []byte, resume bool, step *experiment.Step) (string, error) {
		bs := &bisectStep{Step: *step}
		eo := ExperimentOptions{Output: RepeatOptions{DB: o.DB, Quiet: o.Quiet}, Resume: resume, Ports: o.ports, step: bs}
		err := runPlanText(ctx, path, text, eo, command, io.Discard, stderr)
		return bs.id, err
	}
	cache, err := variant.DefaultCache()
	if err != nil {
		return usage("%v", err)
	}
	o.Options.Cache = cache
	b, err := bisectrun.New(ctx, path, text, o.Options, runStep, stderr)
	if err != nil {
		return err
	}
	st, err := openStore(ctx, o.DB)
	if err != nil {
		return err
	}
	defer st.Close()
	view, err := b.Run(ctx, st)
	if view == nil {
		return err
	}
	if err == nil && b.Ran() > 0 && len(view.Experiments) > 0 {
		// The answer, where show, history and the report find it: a note
		// on the last step's experiment.
		if nerr := noteOn(ctx, st, view.Experiments[len(view.Experiments)-1], bisectNote(view)); nerr != nil {
			err = nerr
		}
	}
	if o.HTML != "" {
		var page bytes.Buffer
		herr := report.BisectHTML(&page, view)
		if herr == nil {
			herr = outpath.Write("--html", o.HTML, page.Bytes(), report.IsPage)
		} else {
			herr = fmt.Errorf("--html %s: %w", o.HTML, herr)
		}
		err = errors.Join(err, herr)
	}
	if o.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return errors.Join(err, enc.Encode(view))
	}
	return errors.Join(err, report.WriteBisect(stdout, view))
}

func bisectNote(v *analysis.BisectView) string {
	s := fmt.Sprintf("bisect %s of %.10s..%.10s on %s: %s", v.ID, v.Good.Hash, v.Bad.Hash, v.Metric, v.Verdict)
	for _, c := range v.Culprits {
		s += fmt.Sprintf("; culprit %.12s %q, %.0f%% of the change", c.Hash, c.Subject, 100*c.Share)
	}
	for _, a := range v.Ambiguous {
		s += fmt.Sprintf("; ambiguous: %s", a.Why)
	}
	return s
}
