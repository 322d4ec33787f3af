package store

import "github.com/iolab/iolab/internal/stats"

import "encoding/json"

// PlanRecord is what an experiment of a plan keeps of it (experiments.plan
// holds it as JSON): the plan's text, to refuse a resume of a changed plan,
// and everything its report needs to compare as the plan asked — written
// by the command that runs the plan, read by show, report, history, compare
// and resume alike, through this one type.
type PlanRecord struct {
	Path     string `json:"plan_path"`
	Text     string `json:"plan_text"`
	Baseline string `json:"baseline"`
	// Along is the matrix field cells are compared along (plan.Along).
	Along     string  `json:"along,omitempty"`
	Threshold float64 `json:"threshold"`
	Order     string  `json:"order"`
	Seed      uint64  `json:"seed"`
	// Commits are the git commits the variants were built from.
	Commits map[string]string `json:"commits,omitempty"`
	// Setups are what else makes each variant what it is, by variant and
	// fact (env, limits, build, start), as written, secrets masked: what
	// history lists under "what changed" when one of them does.
	Setups map[string]map[string]string `json:"setups,omitempty"`
	// Sequential is set when the experiment stops when decided.
	Sequential *SequentialRounds `json:"sequential,omitempty"`
	AutoWarmup bool              `json:"auto_warmup,omitempty"`
	// Extrapolate is where scale fits predict, and the caps they are
	// checked against.
	Extrapolate Extrapolate `json:"extrapolate,omitempty"`
	// Custom are the metrics read from commands' output (a plan's
	// metrics:), each with whether lower is better.
	Custom map[string]bool `json:"custom_metrics,omitempty"`
	// CustomUnits are their units, where known (plan.MetricSpec.Unit).
	CustomUnits map[string]string `json:"custom_units,omitempty"`
	// Precondition, when set, is the rule the warm-up rounds ran until.
	Precondition *stats.Precondition `json:"precondition,omitempty"`
	// Bisect, when set, makes the experiment a step of a bisect.
	Bisect *BisectRecord `json:"bisect,omitempty"`
}

// BisectRecord is an experiment's place in a bisect: which bisect (ID,
// of the range from Good to Bad, of a variant, judged on Metric), its
// step (0: the ends' comparison), and the commits it measured — Mid
// between Low and High ("" in step 0).
type BisectRecord struct {
	ID      string `json:"id"`
	Step    int    `json:"step"`
	Variant string `json:"variant"`
	Metric  string `json:"metric"`
	Good    string `json:"good"`
	Bad     string `json:"bad"`
	Low     string `json:"low"`
	Mid     string `json:"mid,omitempty"`
	High    string `json:"high"`
	// How every step of it is judged: the rounds before its first look
	// and at most, and the ends' threshold of sameness.
	MinRounds int     `json:"min_rounds"`
	MaxRounds int     `json:"max_rounds"`
	Threshold float64 `json:"threshold"`
}

// SequentialRounds are the fewest and most rounds of an experiment that
// stops when decided.
type SequentialRounds struct {
	Min int `json:"min"`
	Max int `json:"max"`
}

// Extrapolate names the scales a scale study's fits predict, and caps —
// per metric, a value the cost cannot exceed — a prediction is checked
// against.
type Extrapolate struct {
	At   []float64          `json:"at,omitempty"`
	Caps map[string]float64 `json:"caps,omitempty"`
}

// PlanRecord decodes the experiment's plan record; ok is false when it
// keeps none. A command's experiment (iolab fs) keeps its settings there
// instead, which read as a record of zero values; only a plan's has Text.
func (e Experiment) PlanRecord() (PlanRecord, bool) {
	var r PlanRecord
	if len(e.Plan) == 0 || json.Unmarshal(e.Plan, &r) != nil {
		return PlanRecord{}, false
	}
	return r, true
}
