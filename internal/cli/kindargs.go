package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/iolab/iolab/internal/flagval"
	"github.com/iolab/iolab/internal/plan"
	"github.com/iolab/iolab/internal/workload"
)

// argVariants are a kind command given arguments — `iolab cmd 'sleep 0.1'
// 'sleep 0.12'`, hyperfine's habit: each argument is the kind's Arguments
// option of a variant of its own, the first the baseline, run in
// randomized interleaved rounds and compared as a plan's variants are. The
// command makes that plan (its text is what is stored, and what --resume
// finds again) and runs it as `iolab experiment` would.
type argVariants struct {
	names        []string
	prepare      string
	cleanup      string
	resume       bool
	untilDecided bool
	maxRounds    int
	minRuns      int
	params       parameters
}

// argVar is the var each variant fills its argument into.
const argVar = "argument"

func (a *argVariants) addFlags(cmd *cobra.Command, kind workload.Kind) {
	cmd.Use = fmt.Sprintf("%s [flags] ['%s' ...]", kind.Name, strings.ToUpper(kind.Arguments))
	cmd.Args = cobra.ArbitraryArgs
	cmd.Long = fmt.Sprintf(`%s.

Given arguments, each is the --%s of a variant of its own, named by -n (or
by itself); they run in randomized interleaved rounds and are compared with
the first, as a plan's variants are (iolab experiment), and stored alike.`, strings.ToUpper(kind.Short[:1])+kind.Short[1:], kind.Arguments)
	cmd.Example = fmt.Sprintf("  iolab %s 'sleep 0.1' 'sleep 0.12'\n  iolab %s -n old -n new --prepare 'sync' --until-decided './old/index data' './new/index data'", kind.Name, kind.Name)
	f := cmd.Flags()
	f.StringArrayVarP(&a.names, "command-name", "n", nil, "with arguments: the name of each, in order (default: the argument itself)")
	f.StringVar(&a.prepare, "prepare", "", "with arguments: a shell command run before every run, untimed ({{variant}} is the run's variant)")
	f.StringVar(&a.cleanup, "cleanup", "", "with arguments: a shell command run once for each argument after its last run, as hyperfine's --cleanup ({{variant}} is its name)")
	f.BoolVar(&a.resume, "resume", false, "with arguments: continue the newest unfinished comparison of the same arguments and flags")
	f.BoolVar(&a.untilDecided, "until-decided", false, "with arguments: after --rounds, add rounds until every comparison is decided, at most --max-rounds")
	flagval.IntVar(f, &a.maxRounds, "max-rounds", 0, plan.MinSequentialRounds, plan.MaxRounds, "with arguments: the most rounds --until-decided runs (default 10 times --rounds, at least 60)")
	flagval.IntVar(f, &a.minRuns, "min-runs", 0, 1, plan.MaxRounds, "with arguments: hyperfine's --min-runs: at least this many rounds, then more until every comparison is decided (--until-decided --rounds N)")
	a.params.addFlags(f)
}

// argOnlyFlags are the flags that shape a comparison of arguments.
var argOnlyFlags = []string{"command-name", "prepare", "cleanup", "resume", "until-decided", "max-rounds", "min-runs", "parameter-list", "parameter-scan", "parameter-step-size"}

// withoutArguments refuses the flags of a comparison given to a command
// without arguments, which would otherwise be dropped.
func (a *argVariants) withoutArguments(cmd *cobra.Command, kind workload.Kind) error {
	if a.params.given() {
		return usage("--parameter-list, --parameter-scan: no command is left as an argument; give the parameter, its values, then each command: iolab %s -L NAME V1,V2 'A {NAME}' ['B' ...] or -P NAME MIN MAX 'A {NAME}'", kind.Name)
	}
	for _, name := range argOnlyFlags {
		if f := cmd.Flags().Lookup(name); f != nil && f.Changed {
			return usage("--%s: only with arguments, each the --%s of a variant (iolab %s --%s ... 'A' ['B' ...]); give the %s as an argument, not as --%s",
				name, kind.Arguments, kind.Name, name, kind.Arguments, kind.Arguments)
		}
	}
	return nil
}

// run makes the plan of the arguments and runs it.
func (a *argVariants) run(cmd *cobra.Command, kind workload.Kind, args []string, repeat RepeatOptions, stdout, stderr io.Writer) error {
	// Every repeat flag is checked as a kind command without arguments
	// checks it: --segment on a kind that does not split is refused, not
	// dropped.
	if err := repeat.validate(); err != nil {
		return err
	}
	if err := checkSplits(kind, repeat); err != nil {
		return err
	}
	if repeat.Segment.Split() || !repeat.StartAt.IsZero() {
		return usage("--segment, --start-at: a comparison of arguments runs on one host; run a plan in segments instead")
	}
	if a.minRuns > 0 {
		if cmd.Flags().Changed("rounds") || cmd.Flags().Changed("runs") {
			return usage("--min-runs and --runs: give one (--runs is how many rounds run, --min-runs how many at least before the comparison is decided)")
		}
		repeat.Rounds, a.untilDecided = a.minRuns, true
	}
	text, err := a.planText(cmd, kind, args, repeat)
	if err != nil {
		return err
	}
	o := ExperimentOptions{Output: repeat, Resume: a.resume, KeepGoing: repeat.KeepGoing, UntilDecided: a.untilDecided, MaxRounds: a.maxRounds}
	line := commandLine(cmd)
	for _, arg := range args {
		line += " " + shellQuote(arg)
	}
	return runPlanText(cmd.Context(), "iolab "+kind.Name, text, o, line, stdout, stderr)
}

// planText is the plan the arguments and flags make: a variant per
// argument, the kind's options that were given on its workload.
func (a *argVariants) planText(cmd *cobra.Command, kind workload.Kind, args []string, repeat RepeatOptions) ([]byte, error) {
	if cmd.Flags().Changed(kind.Arguments) {
		return nil, usage("--%s %q and arguments: the arguments are the --%s of each variant; give one or the other", kind.Arguments, cmd.Flags().Lookup(kind.Arguments).Value, kind.Arguments)
	}
	names := a.names
	switch {
	case len(names) == 0:
		names = args
	case len(names) != len(args):
		return nil, usage("-n/--command-name: %d names for %d arguments; give one for each, in order", len(names), len(args))
	}
	for i, arg := range args {
		if strings.TrimSpace(arg) == "" {
			return nil, usage("argument %d is empty: each argument is the --%s of a variant", i+1, kind.Arguments)
		}
	}
	for i, n := range names {
		if strings.TrimSpace(n) == "" {
			return nil, usage("-n/--command-name: name %d is empty; give each argument a name, or none", i+1)
		}
		if j := slices.Index(names, n); j != i {
			return nil, usage("arguments %d and %d are both named %q; name them apart with -n", j+1, i+1, n)
		}
	}
	if a.maxRounds > 0 && !a.untilDecided {
		return nil, usage("--max-rounds bounds --until-decided; give both")
	}
	if cmd.Flags().Changed("lat-log") {
		return nil, usage("--lat-log %s: a command is one operation, timed whole; there is no operation to log", repeat.LatencyLog)
	}

	axes, err := a.params.axes(cmd.Flags().Changed("parameter-step-size"))
	if err != nil {
		return nil, err
	}
	if args, names, err = expand(args, names, axes); err != nil {
		return nil, err
	}
	d := draftOf(cmd, kind, repeat)
	d.Baseline, d.BeforeRun, d.Cleanup = names[0], a.prepare, a.cleanup
	for i, arg := range args {
		// Each variant watches the process, as a plan's observe: does.
		d.Variants = append(d.Variants, plan.DraftVariant{Name: names[i], Vars: [][2]string{{argVar, arg}}, ObservePID: repeat.ObservePID})
	}
	d.Workload.Keys = append([]plan.Key{{Name: kind.Arguments, Values: []string{"{{" + argVar + "}}"}}}, givenKeys(cmd.Flags(), kind.Keys())...)
	return d.Text()
}

// givenKeys are the kind's keys given as flags, as they were given: a
// secret's or a header's value itself, not the mask the flag shows (the
// plan's text is redacted where it is stored).
func givenKeys(flags *pflag.FlagSet, keys []string) []plan.Key {
	var out []plan.Key
	flags.Visit(func(f *pflag.Flag) {
		if !slices.Contains(keys, f.Name) {
			return
		}
		var values []string
		switch v := f.Value.(type) {
		case flagval.Given:
			values = v.Given()
		case pflag.SliceValue:
			values = v.GetSlice()
		default:
			out = append(out, plan.Key{Name: f.Name, Values: []string{f.Value.String()}})
			return
		}
		out = append(out, plan.Key{Name: f.Name, Values: values, List: flagval.Repeatable(f) || len(values) != 1})
	})
	return out
}

// draftOf is the plan a kind's command makes, named for the kind, with
// the repeat flags.
func draftOf(cmd *cobra.Command, kind workload.Kind, repeat RepeatOptions) plan.Draft {
	d := plan.Draft{Name: kind.Name, Rounds: repeat.Rounds, Warmup: repeat.Warmup, Cooldown: repeat.Cooldown,
		Workload: plan.DraftWorkload{Name: kind.Name, Kind: kind.Name}}
	if cmd.Flags().Changed("seed") {
		d.Seed = &repeat.Seed
	}
	return d
}
