package plan

import (
	"fmt"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Draft is a plan a command makes from its flags — `iolab cmd 'a' 'b'`'s
// variants, `--curve`, `--slo` — written as the text a person would write:
// that text is what is stored, and what --resume finds again.
type Draft struct {
	Name           string
	Rounds, Warmup int
	Cooldown       time.Duration
	Seed           *uint64 // nil: not given
	Baseline       string
	BeforeRun      string // hooks: before_run
	Cleanup        string // hooks: cleanup
	Variants       []DraftVariant
	Workload       DraftWorkload
}

// DraftVariant is a variant of a Draft: its vars, and a process it
// observes.
type DraftVariant struct {
	Name       string
	Vars       [][2]string // in order
	ObservePID string
}

// DraftWorkload is a Draft's one workload: its kind's keys, and a curve or
// a search over its load.
type DraftWorkload struct {
	Name, Kind string
	Keys       []Key
	Curve      []string
	SLO        *[2]string // metric, bound
}

// Key is one of a workload's keys: a value, or a list of them.
type Key struct {
	Name   string
	Values []string
	List   bool
}

// Text is the draft as a plan's YAML.
func (d Draft) Text() ([]byte, error) {
	doc := yaml.Node{Kind: yaml.MappingNode}
	addPair(&doc, "name", d.Name)
	addPair(&doc, "rounds", fmt.Sprint(d.Rounds))
	addPair(&doc, "warmup", fmt.Sprint(d.Warmup))
	if d.Cooldown > 0 {
		addPair(&doc, "cooldown", d.Cooldown.String())
	}
	if d.Seed != nil {
		addPair(&doc, "seed", fmt.Sprint(*d.Seed))
	}
	if d.Baseline != "" {
		addPair(&doc, "baseline", d.Baseline)
	}
	if d.BeforeRun != "" || d.Cleanup != "" {
		hooks := yaml.Node{Kind: yaml.MappingNode}
		// Shell commands: their ${NAME} is the shell's (environ).
		if d.BeforeRun != "" {
			hooks.Content = append(hooks.Content, scalar("before_run"), verbatim(d.BeforeRun))
		}
		if d.Cleanup != "" {
			hooks.Content = append(hooks.Content, scalar("cleanup"), verbatim(d.Cleanup))
		}
		doc.Content = append(doc.Content, scalar("hooks"), &hooks)
	}
	if len(d.Variants) > 0 {
		variants := yaml.Node{Kind: yaml.SequenceNode}
		for _, dv := range d.Variants {
			variants.Content = append(variants.Content, dv.node())
		}
		doc.Content = append(doc.Content, scalar("variants"), &variants)
	}
	doc.Content = append(doc.Content, scalar("workloads"), &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{d.Workload.node()}})
	return yaml.Marshal(&doc)
}

func (dv DraftVariant) node() *yaml.Node {
	v := yaml.Node{Kind: yaml.MappingNode}
	addPair(&v, "name", dv.Name)
	if len(dv.Vars) > 0 {
		vars := yaml.Node{Kind: yaml.MappingNode}
		for _, kv := range dv.Vars {
			addPair(&vars, kv[0], kv[1])
		}
		v.Content = append(v.Content, scalar("vars"), &vars)
	}
	if dv.ObservePID != "" {
		observe := yaml.Node{Kind: yaml.MappingNode}
		addPair(&observe, "pid", dv.ObservePID)
		v.Content = append(v.Content, scalar("observe"), &observe)
	}
	return &v
}

func (dw DraftWorkload) node() *yaml.Node {
	w := yaml.Node{Kind: yaml.MappingNode}
	addPair(&w, "name", dw.Name)
	if len(dw.Curve) > 0 {
		list := yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, x := range dw.Curve {
			list.Content = append(list.Content, scalar(x))
		}
		w.Content = append(w.Content, scalar("curve"), &list)
	}
	if dw.SLO != nil {
		slo := yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
		addPair(&slo, "metric", dw.SLO[0])
		addPair(&slo, "below", dw.SLO[1])
		w.Content = append(w.Content, scalar("slo"), &slo)
	}
	load := yaml.Node{Kind: yaml.MappingNode}
	for _, k := range dw.Keys {
		if !k.List && len(k.Values) == 1 {
			addPair(&load, k.Name, k.Values[0])
			continue
		}
		list := yaml.Node{Kind: yaml.SequenceNode}
		for _, x := range k.Values {
			list.Content = append(list.Content, scalar(x))
		}
		load.Content = append(load.Content, scalar(k.Name), &list)
	}
	w.Content = append(w.Content, scalar(dw.Kind), &load)
	return &w
}

// scalar is a value of the draft as given: a ${ in it is written $${, so
// that reading the plan (environ) gives it back rather than filling it
// from the environment.
func scalar(s string) *yaml.Node { return verbatim(strings.ReplaceAll(s, "${", "$${")) }

// verbatim is a value written as it is: a shell command's.
func verbatim(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

func addPair(m *yaml.Node, k, v string) { m.Content = append(m.Content, scalar(k), scalar(v)) }
