package cli

import (
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/iolab/iolab/internal/plan"
)

// parameters are hyperfine's on a comparison of arguments: -L NAME V1,V2
// (--parameter-list, repeatable) and -P NAME MIN MAX with -D STEP
// (--parameter-scan). As in hyperfine, every argument at every value (and
// every combination of values) is a command of its own, {NAME} in it (and
// in its -n name) the value: a variant each, compared with the first.
type parameters struct {
	lists []string // "NAME V1,V2", as hyperfineArgs joins them
	scan  string   // "NAME MIN MAX"
	step  string
}

// maxParameterValues bounds the commands parameters make, each a variant.
const maxParameterValues = 100

func (p *parameters) addFlags(f *pflag.FlagSet) {
	f.StringArrayVarP(&p.lists, "parameter-list", "L", nil, "with arguments: hyperfine's -L NAME V1,V2,...: every argument at each value, {NAME} in it the value, is a variant of its own (repeatable: every combination)")
	f.StringVarP(&p.scan, "parameter-scan", "P", "", "with arguments: hyperfine's -P NAME MIN MAX: every argument at MIN, MIN+STEP, ... MAX, {NAME} in it the value, is a variant of its own")
	f.StringVarP(&p.step, "parameter-step-size", "D", "", "with --parameter-scan: the step (default 1; integers only without it)")
}

var parameterName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// hyperfineArgs is a command line with hyperfine's options as iolab's
// flags take them: its several-word options made one word each (-L NAME
// VALUES, -P NAME MIN MAX). Only a
// NAME that is a name is joined; anything else is left for the flag's own
// error. hyperfine's -N is iolab cmd's --shell=none. Nothing after "--"
// is touched.
func hyperfineArgs(args []string) []string {
	words := map[string]int{"-L": 2, "--parameter-list": 2, "-P": 3, "--parameter-scan": 3}
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if a == "-N" && len(args) > 0 && args[0] == "cmd" {
			out = append(out, "--shell=none")
			continue
		}
		n := words[a]
		if n == 0 || i+n >= len(args) || !parameterName.MatchString(args[i+1]) {
			out = append(out, a)
			continue
		}
		out = append(out, a, strings.Join(args[i+1:i+1+n], " "))
		i += n
	}
	return out
}

// given says whether any parameter flag was given.
func (p *parameters) given() bool { return len(p.lists) > 0 || p.scan != "" || p.step != "" }

// axes are the parameters the flags give, each with its values.
func (p *parameters) axes(stepGiven bool) ([]plan.Key, error) {
	var out []plan.Key
	add := func(flag, name string, values []string) error {
		switch {
		case !parameterName.MatchString(name):
			return usage("%s %q: want a name of letters, digits and _, then the values (%s)", flag, name, parameterExample(flag))
		case slices.ContainsFunc(out, func(k plan.Key) bool { return k.Name == name }):
			return usage("%s %s: a parameter of that name is given already; give each once", flag, name)
		}
		out = append(out, plan.Key{Name: name, Values: values, List: true})
		return nil
	}
	for _, l := range p.lists {
		name, list, _ := strings.Cut(l, " ")
		values := strings.Split(list, ",")
		if !parameterName.MatchString(name) {
			return nil, usage("--parameter-list %q: want NAME VALUES, NAME of letters, digits and _ (%s)", l, parameterExample("--parameter-list"))
		}
		if strings.TrimSpace(list) == "" || slices.Contains(values, "") {
			return nil, usage("--parameter-list %s: want values separated by commas, none empty (%s)", l, parameterExample("--parameter-list"))
		}
		if err := add("--parameter-list", name, values); err != nil {
			return nil, err
		}
	}
	if stepGiven && p.scan == "" {
		return nil, usage("--parameter-step-size %s: the step of --parameter-scan; give both", p.step)
	}
	if p.scan != "" {
		f := strings.Fields(p.scan)
		if len(f) != 3 {
			return nil, usage("--parameter-scan %q: want NAME MIN MAX (%s)", p.scan, parameterExample("--parameter-scan"))
		}
		values, err := scanValues(f[1], f[2], p.step, stepGiven)
		if err != nil {
			return nil, err
		}
		if err := add("--parameter-scan", f[0], values); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func parameterExample(flag string) string {
	if flag == "--parameter-scan" {
		return "such as -P threads 1 8, or -P delay 0.1 0.3 -D 0.1"
	}
	return "such as -L compiler gcc,clang"
}

// scanValues are MIN, MIN+STEP, ... up to MAX, as hyperfine's scan: whole
// numbers unless a step is given, and then written with the step's
// decimals.
func scanValues(lo, hi, step string, stepGiven bool) ([]string, error) {
	const flag = "--parameter-scan"
	num := func(what, s string) (float64, error) {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
			return 0, usage("%s: %s %q is not a number (%s)", flag, what, s, parameterExample(flag))
		}
		if !stepGiven && v != math.Trunc(v) {
			return 0, usage("%s: %s %s is not a whole number; give -D STEP to scan decimals", flag, what, s)
		}
		return v, nil
	}
	a, err := num("MIN", lo)
	if err != nil {
		return nil, err
	}
	b, err := num("MAX", hi)
	if err != nil {
		return nil, err
	}
	d, decimals := 1.0, 0
	if stepGiven {
		if d, err = strconv.ParseFloat(step, 64); err != nil || !(d > 0) || math.IsInf(d, 0) {
			return nil, usage("--parameter-step-size %q: want a number above 0, such as 0.1", step)
		}
		if _, frac, ok := strings.Cut(strings.TrimLeft(step, "+"), "."); ok {
			decimals = len(frac)
		}
	}
	if _, frac, ok := strings.Cut(lo, "."); ok && stepGiven {
		decimals = max(decimals, len(frac))
	}
	if b < a {
		return nil, usage("%s: MAX %s is below MIN %s", flag, hi, lo)
	}
	// Counted first, with a tolerance for the step's rounding: MAX is in
	// the scan when a whole number of steps reaches it.
	n := math.Floor((b-a)/d+1e-9) + 1
	if n > maxParameterValues {
		return nil, usage("%s %s %s: %.0f values, each a variant of every argument; at most %d (a larger -D STEP)", flag, lo, hi, n, maxParameterValues)
	}
	var out []string
	for i := range int(n) {
		out = append(out, strconv.FormatFloat(a+float64(i)*d, 'f', decimals, 64))
	}
	return out, nil
}

// expand is hyperfine's commands of parameters: each argument at every
// combination of the parameters' values (the last parameter's changing
// fastest), {NAME} in the argument and in its name replaced by the value.
// Where names would not tell two commands apart, each says its values.
func expand(args, names []string, axes []plan.Key) ([]string, []string, error) {
	if len(axes) == 0 {
		return args, names, nil
	}
	combos := [][]string{nil}
	for _, ax := range axes {
		var next [][]string
		for _, c := range combos {
			for _, v := range ax.Values {
				next = append(next, append(slices.Clone(c), v))
			}
		}
		combos = next
	}
	if n := len(args) * len(combos); n > maxParameterValues {
		return nil, nil, usage("--parameter-list, --parameter-scan: %d commands (%d arguments x %d combinations of values), each a variant; at most %d", n, len(args), len(combos), maxParameterValues)
	}
	var outArgs, outNames, values []string
	for i, arg := range args {
		for _, c := range combos {
			pairs, said := make([]string, 0, 2*len(axes)), make([]string, 0, len(axes))
			for j, ax := range axes {
				pairs = append(pairs, "{"+ax.Name+"}", c[j])
				said = append(said, ax.Name+"="+c[j])
			}
			r := strings.NewReplacer(pairs...)
			outArgs = append(outArgs, r.Replace(arg))
			outNames = append(outNames, r.Replace(names[i]))
			values = append(values, strings.Join(said, ", "))
		}
	}
	for i, n := range outNames {
		if slices.Index(outNames, n) != i {
			for j := range outNames {
				outNames[j] += " (" + values[j] + ")"
			}
			break
		}
	}
	return outArgs, outNames, nil
}
