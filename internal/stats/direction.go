package stats

// Metric says how the statistics read one metric (metrics.Def.Stat): which way is better, and whether
// zero is an ordinary value of it (a count of late frames, bytes a server
// wrote), which a ratio cannot carry: such metrics are compared by their
// difference.
type Metric struct {
	LowerIsBetter bool
	// Zeroable metrics are compared by paired differences, keeping every
	// round; the others by paired log ratios.
	Zeroable bool
}
