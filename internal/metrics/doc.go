// Package metrics turns per-operation records into bounded aggregates.
//
// Each load-generating worker owns one Recorder and calls Record once per
// completed operation with its direction, size and latency. A Recorder keeps
// an HDR latency histogram per direction, counters, errors, and hands its
// closed seconds to a shared Series, which keeps per-second buckets (ops,
// bytes, p50, p99, max) of the whole run. When the run ends the recorders are
// merged into one Result: histograms are merged exactly, so percentiles are
// those of all operations of all workers, never an average of percentiles.
//
// Memory is bounded by the number of directions, workers and seconds of the
// run, never by the number of operations.
package metrics
