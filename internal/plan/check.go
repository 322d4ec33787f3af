package plan

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/iolab/iolab/internal/suggest"
	"github.com/iolab/iolab/internal/units"
	"github.com/iolab/iolab/internal/workload"
)

// check validates the plan as a whole.
func (p *Plan) check(top Pos) error {
	if p.Name == "" {
		p.Name = strings.TrimSuffix(filepath.Base(p.Path), filepath.Ext(p.Path))
	}
	if pc := p.Precondition; pc != nil {
		switch {
		case p.warmupGiven:
			return p.PreconditionPos.Errorf("precondition: the warm-up rounds run until steady, up to precondition.rounds (%d); leave warmup: out", pc.Rounds)
		case p.Order == "sequential":
			return p.PreconditionPos.Errorf("precondition: steadiness is judged round by round, every cell in each; order: sequential runs a cell's rounds back to back")
		}
		p.Warmup = pc.Rounds
	}
	if len(p.Variants) == 0 {
		p.Variants = []Variant{{Name: "default", Pos: top, Stop: Stop{Signal: "TERM", Grace: 10 * time.Second}}}
	}
	names := map[string]bool{}
	for _, v := range p.Variants {
		switch {
		case v.Name == "":
			return v.Pos.Errorf("variant without a name")
		case names[v.Name]:
			return v.Pos.Errorf("variant %q defined twice", v.Name)
		case v.Git != nil && (v.Git.Repo == "" || v.Git.Ref == ""):
			return v.Pos.Errorf("variant %q: git needs repo and ref", v.Name)
		case v.Ready != nil && v.Start == "":
			return v.Pos.Errorf("variant %q: ready without start; ready checks a started server", v.Name)
		case v.Observe != nil && v.Start != "":
			return v.Pos.Errorf("variant %q: observe names a process iolab did not start; the server start: runs is watched already", v.Name)
		case v.Observe != nil && (v.Observe.PID.Text == "") == (v.Observe.PIDFile.Text == ""):
			return v.Pos.Errorf("variant %q: observe: give one of pid or pidfile", v.Name)
		case v.Observe != nil && v.Observe.PID.Text != "":
			if _, err := units.ParseInt(v.Observe.PID.Text, 1, 1<<22); err != nil {
				return v.Observe.PID.Pos.Errorf("observe.pid %q: %v; want the PID of a running process", v.Observe.PID.Text, err)
			}
		}
		if err := p.checkVars(v); err != nil {
			return err
		}
		texts := map[string]string{"build": v.Build, "workdir": v.Workdir}
		for k, x := range v.Env {
			texts["env."+k] = x
		}
		for _, field := range slices.Sorted(maps.Keys(texts)) {
			if err := variantWide(v, field, texts[field]); err != nil {
				return err
			}
		}
		if _, err := ParseSignal(v.Stop.Signal); err != nil {
			return v.Pos.Errorf("variant %q: stop.signal: %v", v.Name, err)
		}
		names[v.Name] = true
	}
	if err := p.checkCleanup(); err != nil {
		return err
	}
	if p.Baseline == "" {
		p.Baseline = p.Variants[0].Name
	} else if !names[p.Baseline] {
		known := make([]string, 0, len(names))
		for n := range names {
			known = append(known, n)
		}
		sort.Strings(known)
		return top.Errorf("baseline %q is not a variant; variants: %s", p.Baseline, strings.Join(known, ", "))
	}
	if len(p.Workloads) == 0 {
		return top.Errorf("no workloads; add a workloads: list")
	}
	wnames := map[string]bool{}
	for i := range p.Workloads {
		w := &p.Workloads[i]
		if w.Name == "" {
			w.Name = w.Kind
		}
		if wnames[w.Name] {
			return w.Pos.Errorf("workload %q defined twice; give each a distinct name", w.Name)
		}
		wnames[w.Name] = true
	}
	if p.Along != "" {
		if why := p.AlongError(p.Along); why != "" {
			return p.AlongPos.Errorf("along %q: %s", p.Along, why)
		}
	}
	return nil
}

// AlongError says why cells cannot be compared along a field (FIELD or
// FIELD=BASE: a plan's along: or --along), or "": it must be a matrix
// field of every workload, and the base one of its values there.
func (p *Plan) AlongError(along string) string {
	field, base := AlongField(along)
	for _, w := range p.Workloads {
		i := slices.IndexFunc(w.Matrix, func(ax Axis) bool { return ax.Field == field })
		if i < 0 {
			var fields []string
			for _, ax := range w.Matrix {
				fields = append(fields, ax.Field)
			}
			return fmt.Sprintf("not a matrix field of workload %q (its matrix: %s); cells are compared along a field every workload's matrix has",
				w.Name, cmp.Or(strings.Join(fields, ", "), "none"))
		}
		if base != "" && !slices.ContainsFunc(w.Matrix[i].Values, func(v Value) bool { return v.Text == base }) {
			return fmt.Sprintf("%s is not a value of the matrix field %s of workload %q", base, field, w.Name)
		}
	}
	return ""
}

// AlongField splits an along: (FIELD or FIELD=BASE).
func AlongField(along string) (field, base string) {
	field, base, _ = strings.Cut(along, "=")
	return strings.TrimSpace(field), strings.TrimSpace(base)
}

// checkCleanup refuses a template the cleanup hook has no value for: it
// runs once per variant after the experiment's runs, in no cell and with
// no server started.
func (p *Plan) checkCleanup() error {
	for _, m := range Template.FindAllString(p.Hooks.Cleanup, -1) {
		name := strings.TrimSpace(strings.Trim(m, "{}"))
		if _, isVar := p.Variants[0].Vars[name]; isVar || (name != "port" && slices.Contains(VariantTemplates, name)) {
			continue
		}
		return p.Hooks.CleanupPos.Errorf("hooks.cleanup: %s has no value there: it runs once per variant after its last run, in no cell and with no server; {{variant}}, {{workdir}}, {{tmp}} and the variants' vars do", m)
	}
	return nil
}

// varName is what a variant's vars may be called: a template's name.
var varName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// checkVars refuses a variant's var that could not be told from another
// template — a variant's own, a matrix field, one a workload kind fills —
// or that holds a template itself. Every variant names the same vars, so
// every cell's workload is filled alike.
func (p *Plan) checkVars(v Variant) error {
	reserved := map[string]string{}
	for _, t := range VariantTemplates {
		reserved[t] = "a variant's own template"
	}
	for _, w := range p.Workloads {
		for _, ax := range w.Matrix {
			reserved[ax.Field] = fmt.Sprintf("a matrix field of workload %q", cmp.Or(w.Name, w.Kind))
		}
		if kind, ok := workload.Lookup(w.Kind); ok {
			for _, t := range kind.Templates {
				reserved[t] = fmt.Sprintf("a template the %s workload fills", w.Kind)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(v.Vars)) {
		switch {
		case !varName.MatchString(k):
			return v.Pos.Errorf("variant %q: vars.%s: a var's name is a template's: letters, digits and _", v.Name, k)
		case reserved[k] != "":
			return v.Pos.Errorf("variant %q: vars.%s: {{%s}} is %s; call the var something else", v.Name, k, k, reserved[k])
		case Template.MatchString(v.Vars[k]):
			return v.Pos.Errorf("variant %q: vars.%s: a var's value is filled in as it is; it cannot hold a template (%s)", v.Name, k, Template.FindString(v.Vars[k]))
		}
	}
	first := p.Variants[0]
	if !slices.Equal(slices.Sorted(maps.Keys(first.Vars)), slices.Sorted(maps.Keys(v.Vars))) {
		return v.Pos.Errorf("variant %q: vars %v, variant %q: vars %v: every variant gives the same vars, so each cell's load is filled in every variant",
			v.Name, slices.Sorted(maps.Keys(v.Vars)), first.Name, slices.Sorted(maps.Keys(first.Vars)))
	}
	return nil
}

// Template matches a {{template}} in a plan's text.
var Template = regexp.MustCompile(`\{\{[^}]*\}\}`)

// VariantTemplates are the templates every variant fills.
var VariantTemplates = []string{"variant", "workdir", "tmp", "port"}

// variantWide refuses, in a field set once per variant (its build, env,
// workdir), a template only a cell can fill (a matrix field's).
func variantWide(v Variant, field, text string) error {
	known := make([]string, len(VariantTemplates))
	for i, t := range VariantTemplates {
		known[i] = "{{" + t + "}}"
	}
	for _, m := range Template.FindAllString(text, -1) {
		if !slices.Contains(known, m) {
			return v.Pos.Errorf("variant %q: %s: unknown template %s; known here: %s (a matrix field differs between cells: use it in start:, hooks or workload keys)",
				v.Name, field, m, strings.Join(known, ", "))
		}
	}
	return nil
}

// Cells counts the cells the plan expands to — every matrix point of every
// workload, for every variant — without expanding it, saturating at
// math.MaxInt, so a schedule too large to build can be refused first.
func (p *Plan) Cells() int {
	total := 0
	for _, w := range p.Workloads {
		n := 1
		for _, ax := range w.Matrix {
			n = satMul(n, len(ax.Values))
		}
		total = satAdd(total, satMul(n, len(p.Variants)))
	}
	return total
}

func satMul(a, b int) int {
	if a != 0 && b > math.MaxInt/a {
		return math.MaxInt
	}
	return a * b
}

func satAdd(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}

// ErrUnknownSignal is returned by ParseSignal.
var ErrUnknownSignal = errors.New("unknown signal")

// ParseSignal accepts TERM, SIGTERM, INT, KILL, HUP, QUIT, USR1, USR2.
func ParseSignal(s string) (syscall.Signal, error) {
	sigs := map[string]syscall.Signal{"TERM": syscall.SIGTERM, "INT": syscall.SIGINT, "KILL": syscall.SIGKILL,
		"HUP": syscall.SIGHUP, "QUIT": syscall.SIGQUIT, "USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2}
	if sig, ok := sigs[strings.TrimPrefix(strings.ToUpper(s), "SIG")]; ok {
		return sig, nil
	}
	return 0, fmt.Errorf("%q: %w; want TERM, INT, KILL, HUP, QUIT, USR1 or USR2", s, ErrUnknownSignal)
}

// didYouMean is "; did you mean KEY?" for the known key name is a slip
// away from, or "".
func didYouMean(name string, known []string) string {
	if near := suggest.Closest(name, known); near != "" {
		return "; did you mean " + near + "?"
	}
	return ""
}
