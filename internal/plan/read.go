package plan

import (
	"fmt"
	"math"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/iolab/iolab/internal/units"
)

type reader struct{ file string }

func (r reader) pos(n *yaml.Node) Pos { return Pos{File: r.file, Line: n.Line, Col: n.Column} }

// fields walks a mapping, rejecting keys not in known.
func (r reader) fields(n *yaml.Node, what string, known []string, fn func(key string, v *yaml.Node) error) error {
	if n.Kind != yaml.MappingNode {
		return r.pos(n).Errorf("%s: want a mapping of %s", what, strings.Join(known, ", "))
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !contains(known, k.Value) {
			return r.pos(k).Errorf("unknown key %q in %s; known: %s%s", k.Value, what, strings.Join(known, ", "), didYouMean(k.Value, known))
		}
		if seen[k.Value] {
			return r.pos(k).Errorf("%s: %q given twice", what, k.Value)
		}
		seen[k.Value] = true
		if err := fn(k.Value, v); err != nil {
			return err
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (r reader) scalar(n *yaml.Node, field string) (Value, error) {
	if n.Kind != yaml.ScalarNode {
		return Value{}, r.pos(n).Errorf("%s: want a single value", field)
	}
	return Value{Text: n.Value, Pos: r.pos(n)}, nil
}

func (r reader) str(n *yaml.Node, field string, dst *string) error {
	v, err := r.scalar(n, field)
	*dst = v.Text
	return err
}

// integer reads a whole number from min to max.
func (r reader) integer(n *yaml.Node, field string, min, max int64) (int64, error) {
	v, err := r.scalar(n, field)
	if err != nil {
		return 0, err
	}
	i, err := units.ParseInt(v.Text, min, max)
	if err != nil {
		return 0, v.Pos.Errorf("%s %q: %v", field, v.Text, err)
	}
	return i, nil
}

func (r reader) intField(n *yaml.Node, field string, min, max int64, dst *int) error {
	i, err := r.integer(n, field, min, max)
	*dst = int(i)
	return err
}

func (r reader) duration(n *yaml.Node, field string, dst *time.Duration) error {
	v, err := r.scalar(n, field)
	if err != nil {
		return err
	}
	d, err := units.ParseDuration(v.Text)
	if err != nil {
		return v.Pos.Errorf("%s %q: %v", field, v.Text, err)
	}
	*dst = d
	return nil
}

func (r reader) plan(n *yaml.Node, p *Plan) error {
	known := PlanKeys
	return r.fields(n, "the plan", known, func(key string, v *yaml.Node) error {
		switch key {
		case "name":
			return r.str(v, key, &p.Name)
		case "rounds":
			return r.rounds(v, p)
		case "warmup":
			p.warmupGiven = true
			return r.intField(v, key, 0, MaxRounds, &p.Warmup)
		case "warmup_per_variant":
			if v.Kind == yaml.ScalarNode && v.Value == "auto" {
				p.AutoWarmup = true
				return nil
			}
			if err := r.intField(v, key, 0, maxVariantWarmup, &p.WarmupPerVariant); err != nil {
				return fmt.Errorf("%w (or auto: no runs, and the rounds still warming up left out, as every comparison does)", err)
			}
		case "cooldown":
			return r.duration(v, key, &p.Cooldown)
		case "seed":
			s, err := r.integer(v, key, 0, math.MaxInt64)
			p.Seed = uint64(s)
			return err
		case "baseline":
			return r.str(v, key, &p.Baseline)
		case "along":
			p.AlongPos = r.pos(v)
			return r.str(v, key, &p.Along)
		case "threshold":
			return r.threshold(v, &p.Threshold)
		case "order":
			if err := r.str(v, key, &p.Order); err != nil {
				return err
			}
			if p.Order != "random" && p.Order != "sequential" {
				return r.pos(v).Errorf("order: %q: want random or sequential", p.Order)
			}
		case "variants":
			return r.variants(v, p)
		case "hooks":
			return r.hooks(v, &p.Hooks)
		case "workloads":
			return r.workloads(v, p)
		case "extrapolate":
			return r.extrapolate(v, &p.Extrapolate)
		case "precondition":
			return r.precondition(v, p)
		case "ports":
			var text string
			if err := r.str(v, key, &text); err != nil {
				return err
			}
			pr, err := ParsePortRange(text)
			if err != nil {
				return r.pos(v).Errorf("ports: %v", err)
			}
			p.Ports = pr
		}
		return nil
	})
}

// maxVariantWarmup bounds warmup_per_variant: past it, a typo.
const maxVariantWarmup = 10_000

// MinSequentialRounds is the fewest rounds an experiment that stops when
// decided may stop after: fewer say too little about the noise for any
// interval.
const MinSequentialRounds = 3

// rounds reads a fixed count, or {min, max}: stop when decided.
func (r reader) rounds(n *yaml.Node, p *Plan) error {
	if n.Kind != yaml.MappingNode {
		return r.intField(n, "rounds", 1, MaxRounds, &p.Rounds)
	}
	var lo, hi int
	err := r.fields(n, "rounds", []string{"min", "max"}, func(key string, v *yaml.Node) error {
		if key == "min" {
			return r.intField(v, "rounds.min", MinSequentialRounds, MaxRounds, &lo)
		}
		return r.intField(v, "rounds.max", MinSequentialRounds, MaxRounds, &hi)
	})
	switch {
	case err != nil:
		return err
	case lo == 0 || hi == 0:
		return r.pos(n).Errorf("rounds: give both min and max (rounds: {min: 6, max: 60}: stop when every comparison is decided), or one number")
	case hi < lo:
		return r.pos(n).Errorf("rounds: max %d is below min %d", hi, lo)
	}
	p.MinRounds, p.Rounds = lo, hi
	return nil
}

func (r reader) threshold(n *yaml.Node, dst *float64) error {
	v, err := r.scalar(n, "threshold")
	if err != nil {
		return err
	}
	text := strings.TrimSpace(v.Text)
	pct := strings.HasSuffix(text, "%")
	f, err := units.ParseFloat(strings.TrimSuffix(text, "%"), 0, 100)
	if pct {
		f /= 100
	}
	if err != nil || f <= 0 || f >= 1 {
		return v.Pos.Errorf("threshold %q: want a percentage above 0 and below 100 such as 2%% (or a fraction such as 0.02)", v.Text)
	}
	*dst = f
	return nil
}

func (r reader) list(n *yaml.Node, what string) ([]*yaml.Node, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, r.pos(n).Errorf("%s: want a list", what)
	}
	return n.Content, nil
}

// stringMap reads a mapping of names to scalar values (env).
func (r reader) stringMap(n *yaml.Node, what string) (map[string]string, error) {
	if n.Kind != yaml.MappingNode {
		return nil, r.pos(n).Errorf("%s: want a mapping of NAME: value", what)
	}
	m := map[string]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		v, err := r.scalar(n.Content[i+1], what+"."+n.Content[i].Value)
		if err != nil {
			return nil, err
		}
		m[n.Content[i].Value] = v.Text
	}
	return m, nil
}

func (r reader) hooks(n *yaml.Node, h *Hooks) error {
	known := HookKeys
	return r.fields(n, "hooks", known, func(key string, v *yaml.Node) error {
		dst := map[string]*string{"before_run": &h.BeforeRun, "after_run": &h.AfterRun,
			"before_round": &h.BeforeRound, "after_round": &h.AfterRound, "cleanup": &h.Cleanup}[key]
		if key == "cleanup" {
			h.CleanupPos = r.pos(v)
		}
		if err := r.str(v, "hooks."+key, dst); err != nil {
			return err
		}
		// A round hook runs once per round, in the plan's directory, for
		// no variant and no cell: no template has a value there.
		if m := Template.FindString(*dst); m != "" && strings.HasSuffix(key, "_round") {
			return r.pos(v).Errorf("hooks.%s: %s has no value in a round hook, which runs once per round outside any variant or cell; use it in before_run/after_run", key, m)
		}
		return nil
	})
}

func (r reader) matrix(n *yaml.Node) ([]Axis, error) {
	if n.Kind != yaml.MappingNode {
		return nil, r.pos(n).Errorf("matrix: want a mapping of field: [values]")
	}
	var axes []Axis
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		ax := Axis{Field: k.Value}
		if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
			return nil, r.pos(v).Errorf("matrix.%s: want a non-empty list of values", k.Value)
		}
		for _, x := range v.Content {
			val, err := r.scalar(x, "matrix."+k.Value)
			if err != nil {
				return nil, err
			}
			val.KeyPos = r.pos(k)
			ax.Values = append(ax.Values, val)
		}
		axes = append(axes, ax)
	}
	return axes, nil
}
