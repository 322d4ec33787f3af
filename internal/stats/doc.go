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
// This package imports nothing from the CLI or from any workload.
package stats
