package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/iolab/iolab/internal/plan"
	"github.com/iolab/iolab/internal/workload"
)

// capacityFlags are --curve and --slo on the command of a kind that can
// be paced. Given either, the command runs as the plan of one workload —
// its options those given — with that curve or that search, as `iolab
// experiment` runs it: the plan's text is what is stored, and what
// --resume finds again.
type capacityFlags struct {
	curve  []string
	slo    string
	resume bool
}

func (c *capacityFlags) addFlags(f *pflag.FlagSet) {
	f.StringSliceVar(&c.curve, "curve", nil, "run flat out, then at these loads in percent of that rate (10,50,90): the load–latency curve, as vdbench's curve=")
	f.StringVar(&c.slo, "slo", "", "search for the highest rate at which METRIC stays below BOUND with 95% confidence: 'get.response_p99_ns<20ms'")
	f.BoolVar(&c.resume, "resume", false, "with --curve or --slo: continue the newest unfinished run of the same flags")
}

// given says the command is to run a curve or a search.
func (c *capacityFlags) given() bool { return len(c.curve) > 0 || c.slo != "" }

// run makes the plan of the command's flags (and fixed, keys the command
// sets itself, such as http's mode) and runs it.
func (c *capacityFlags) run(cmd *cobra.Command, kind workload.Kind, fixed map[string]string, repeat RepeatOptions, stdout, stderr io.Writer) error {
	if err := repeat.validate(); err != nil {
		return err
	}
	if cmd.Flags().Changed("lat-log") {
		return usage("--lat-log with --curve or --slo: the runs are at many loads; log a single load's operations without them")
	}
	d := draftOf(cmd, kind, repeat)
	for _, x := range c.curve {
		d.Workload.Curve = append(d.Workload.Curve, strings.TrimSpace(x))
	}
	if c.slo != "" {
		metric, bound, ok := strings.Cut(c.slo, "<")
		if !ok || strings.TrimSpace(metric) == "" || strings.TrimSpace(bound) == "" {
			return usage("--slo %q: want METRIC<BOUND, such as 'get.response_p99_ns<20ms'", c.slo)
		}
		d.Workload.SLO = &[2]string{strings.TrimSpace(metric), strings.TrimSpace(bound)}
	}
	for k, v := range fixed {
		d.Workload.Keys = append(d.Workload.Keys, plan.Key{Name: k, Values: []string{v}})
	}
	d.Workload.Keys = append(d.Workload.Keys, givenKeys(cmd.Flags(), kind.Keys())...)
	text, err := d.Text()
	if err != nil {
		return err
	}
	o := ExperimentOptions{Output: repeat, Resume: c.resume, KeepGoing: repeat.KeepGoing}
	return runPlanText(cmd.Context(), fmt.Sprintf("iolab %s --curve/--slo", kind.Name), text, o, commandLine(cmd), stdout, stderr)
}
