package analysis

import "github.com/iolab/iolab/internal/bisect"

// BisectView is a bisect's answer, as the text, JSON and HTML show it.
type BisectView struct {
	ID      string        `json:"id"`
	Plan    string        `json:"plan"`
	Variant string        `json:"variant"`
	Metric  string        `json:"metric"`
	Good    bisect.Commit `json:"good"`
	Bad     bisect.Commit `json:"bad"`
	// Commits counts the range, good and bad included.
	Commits int `json:"commits"`
	// Change is bad against good, from the ends' own step.
	Change    RatioEstimate      `json:"change"`
	Differ    bool               `json:"differ"`
	Verdict   string             `json:"verdict"`
	Culprits  []BisectCulprit    `json:"culprits"`
	Ambiguous []bisect.Ambiguous `json:"ambiguous,omitempty"`
	Skipped   []bisect.Commit    `json:"skipped,omitempty"`
	Steps     []BisectStep       `json:"steps"`
	// Rounds is what every step ran, in all.
	Rounds      int      `json:"rounds"`
	Experiments []string `json:"experiments"`
}

// RatioEstimate is a ratio (variant over baseline) with its 95% interval,
// over Rounds rounds.
type RatioEstimate struct {
	Ratio  float64    `json:"ratio"`
	CI95   [2]float64 `json:"ci95"`
	Rounds int        `json:"rounds"`
}

// BisectCulprit is a commit that holds the change or its share.
type BisectCulprit struct {
	bisect.Culprit
	// Step is the culprit against its parent, from the step that
	// measured both; Confirmed, that its interval excludes no change
	// (else a step before may have gone wrong).
	Step      *RatioEstimate `json:"step,omitempty"`
	Confirmed bool           `json:"confirmed"`
}

// BisectStep is one step: the commits it measured (Mid between Low and
// High; none in step 0, the ends' comparison, nor in a step that Confirms
// a culprit, High, against its parent, Low), what it found and what it
// cost.
type BisectStep struct {
	Step       int            `json:"step"`
	Experiment string         `json:"experiment,omitempty"`
	Low        string         `json:"low"`
	Mid        string         `json:"mid,omitempty"`
	High       string         `json:"high"`
	MidIndex   int            `json:"mid_index"` // in the range, good 0
	Confirms   bool           `json:"confirms,omitempty"`
	Verdict    bisect.Verdict `json:"verdict"`
	// Position is the commit's share of its interval's step; Place its
	// place on the whole change (0 good, 1 bad) once the search placed it.
	Position float64  `json:"position"`
	Place    *float64 `json:"place,omitempty"`
	Rounds   int      `json:"rounds"`
	// ClientDelayed is the rounds not counted: a commit's run in them
	// measured its client as much as its target (metrics.ClientDelayed).
	ClientDelayed int `json:"client_delayed_rounds,omitempty"`
	// VsLow, ToHigh and Whole are the step's comparisons: its commit
	// against the low end, the high end against it, the high end against
	// the low one.
	VsLow  *RatioEstimate `json:"vs_low,omitempty"`
	ToHigh *RatioEstimate `json:"high_vs_mid,omitempty"`
	Whole  *RatioEstimate `json:"high_vs_low,omitempty"`
}

// Shown says a culprit's step against its parent is shown to go the way
// of the whole change.
func Shown(step *RatioEstimate, whole RatioEstimate) bool {
	if step == nil {
		return false
	}
	if whole.Ratio > 1 {
		return step.CI95[0] > 1
	}
	return step.CI95[1] < 1
}
