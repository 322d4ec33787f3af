package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"

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
	resume       bool
	untilDecided bool
	maxRounds    int
	// own are the kind's options: those given go to the plan's workload.
	own *pflag.FlagSet
}

// argVar is the var each variant fills its argument into.
const argVar = "argument"

func (a *argVariants) addFlags(cmd *cobra.Command, kind workload.Kind, own *pflag.FlagSet) {
	a.own = own
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
	f.BoolVar(&a.resume, "resume", false, "with arguments: continue the newest unfinished comparison of the same arguments and flags")
	f.BoolVar(&a.untilDecided, "until-decided", false, "with arguments: after --rounds, add rounds until every comparison is decided, at most --max-rounds")
	flagval.IntVar(f, &a.maxRounds, "max-rounds", 0, plan.MinSequentialRounds, plan.MaxRounds, "with arguments: the most rounds --until-decided runs (default 10 times --rounds, at least 60)")
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
	if a.own.Changed(kind.Arguments) {
		return nil, usage("--%s %q and arguments: the arguments are the --%s of each variant; give one or the other", kind.Arguments, a.own.Lookup(kind.Arguments).Value, kind.Arguments)
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

	load := yaml.Node{Kind: yaml.MappingNode}
	addPair(&load, kind.Arguments, "{{"+argVar+"}}")
	givenKeys(&load, a.own, kind.Keys())
	doc := repeatNode(cmd, kind, repeat)
	addPair(&doc, "baseline", names[0])
	if a.prepare != "" {
		hooks := yaml.Node{Kind: yaml.MappingNode}
		addPair(&hooks, "before_run", a.prepare)
		doc.Content = append(doc.Content, scalar("hooks"), &hooks)
	}
	variants := yaml.Node{Kind: yaml.SequenceNode}
	for i, arg := range args {
		v, vars := yaml.Node{Kind: yaml.MappingNode}, yaml.Node{Kind: yaml.MappingNode}
		addPair(&v, "name", names[i])
		addPair(&vars, argVar, arg)
		v.Content = append(v.Content, scalar("vars"), &vars)
		if repeat.ObservePID != "" { // each variant watches the process, as a plan's observe: does
			observe := yaml.Node{Kind: yaml.MappingNode}
			addPair(&observe, "pid", repeat.ObservePID)
			v.Content = append(v.Content, scalar("observe"), &observe)
		}
		variants.Content = append(variants.Content, &v)
	}
	doc.Content = append(doc.Content, scalar("variants"), &variants)
	w := yaml.Node{Kind: yaml.MappingNode}
	addPair(&w, "name", kind.Name)
	w.Content = append(w.Content, scalar(kind.Name), &load)
	doc.Content = append(doc.Content, scalar("workloads"), &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{&w}})
	return yaml.Marshal(&doc)
}

// givenKeys adds to a workload's node the kind's keys given as flags, as
// they were given: a secret's or a header's value itself, not the mask
// the flag shows (the plan's text is redacted where it is stored).
func givenKeys(load *yaml.Node, flags *pflag.FlagSet, keys []string) {
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
			addPair(load, f.Name, f.Value.String())
			return
		}
		if !flagval.Repeatable(f) && len(values) == 1 {
			addPair(load, f.Name, values[0])
			return
		}
		list := yaml.Node{Kind: yaml.SequenceNode}
		for _, x := range values {
			list.Content = append(list.Content, scalar(x))
		}
		load.Content = append(load.Content, scalar(f.Name), &list)
	})
}

// repeatNode is a plan's top, named for the kind, with the repeat flags.
func repeatNode(cmd *cobra.Command, kind workload.Kind, repeat RepeatOptions) yaml.Node {
	doc := yaml.Node{Kind: yaml.MappingNode}
	addPair(&doc, "name", kind.Name)
	addPair(&doc, "rounds", fmt.Sprint(repeat.Rounds))
	addPair(&doc, "warmup", fmt.Sprint(repeat.Warmup))
	if repeat.Cooldown > 0 {
		addPair(&doc, "cooldown", repeat.Cooldown.String())
	}
	if cmd.Flags().Changed("seed") {
		addPair(&doc, "seed", fmt.Sprint(repeat.Seed))
	}
	return doc
}

func scalar(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

func addPair(m *yaml.Node, k, v string) { m.Content = append(m.Content, scalar(k), scalar(v)) }
