// Package stats turns the values of one metric over repeated runs into
// numbers that carry their uncertainty, and into warnings that say why they
// may be noisy.
//
// Summarize gives the median with its order-statistic confidence interval
// (golang.org/x/perf/benchmath, as benchstat computes it), mean, standard
// deviation and coefficient of variation. Kendall tests the values for a
// trend over run order (a disk slowing down over a long experiment);
// ModifiedZ finds a first run unlike the rest (a cold cache), the way
// hyperfine does. Diagnose combines these into Warnings: values with a
// stable code and a plain sentence, never log lines.
//
// Compare judges a variant against the baseline from rounds that ran both:
// paired per round (log ratios, or differences for metrics where zero is
// a value), with a verdict rule — the interval beyond the threshold and a
// Holm-adjusted p across a family (Finish) — whose MDE and rounds-needed
// are computed for that very rule, averaging over what the data cannot
// know (the true noise, the true effect). bench/stats_calibration checks
// the promises by simulation. Every metric's direction is in one table
// (Describe).
//
// This package imports nothing from the CLI or from any workload.
package stats
