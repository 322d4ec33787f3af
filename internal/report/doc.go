// Package report writes the report model (package analysis) as people and
// programs read it: the terminal's text, Markdown, JSON, CSV, NDJSON, the
// Go benchmark format, fio's JSON and json+, and a self-contained HTML page
// with plots. Each format is a function of a writer and the model alone —
// Terminal(w, r), CSV(w, r, series), HTML(w, page) — and has a golden file
// (testdata, refreshed with go test ./internal/report -update).
package report
