package plan

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestParseDefaultsAndMatrix(t *testing.T) {
	t.Parallel()
	p, err := Parse("dir/x.yaml", []byte(`
variants:
  - name: a
    env: {MODE: fast}
  - name: b
workloads:
  - name: w
    cmd: {run: "./run {{n}} {{m}}"}
    matrix:
      n: [1, 2]
      m: [x, y, z]
`))
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "x" || p.Rounds != 6 || p.Warmup != 1 || p.Threshold != 0.02 || p.Order != "random" || p.Baseline != "a" {
		t.Fatalf("defaults: %+v", p)
	}
	if p.Variants[0].Env["MODE"] != "fast" || p.Variants[1].Stop.Signal != "TERM" || p.Variants[1].Stop.Grace != 10*time.Second {
		t.Fatalf("variants: %+v", p.Variants)
	}
	pts := p.Workloads[0].Points()
	if len(pts) != 6 || pts[0]["n"].Text != "1" || pts[0]["m"].Text != "x" || pts[5]["n"].Text != "2" || pts[5]["m"].Text != "z" {
		t.Fatalf("points: %v", pts)
	}
	if pos := pts[0]["m"].Pos; pos.Line != 11 || pos.Col != 11 {
		t.Fatalf("position of matrix value: %v", pos)
	}
}

func TestParseErrorsAreLocated(t *testing.T) {
	t.Parallel()
	tests := []struct{ text, want string }{
		{"variants:\n  - name: a\n    git: {repo: .}\nworkloads:\n  - cmd: {run: x}\n", "p.yaml:2:5: variant \"a\": git needs repo and ref"},
		{"variants:\n  - name: a\n  - name: a\nworkloads:\n  - cmd: {run: x}\n", "p.yaml:3:5: variant \"a\" defined twice"},
		{"variants:\n  - name: a\n    stop: {signal: BOOM}\nworkloads:\n  - cmd: {run: x}\n", "stop.signal"},
		{"variants:\n  - name: a\n    ready: {http: x}\nworkloads:\n  - cmd: {run: x}\n", "ready without start"},
		{"order: shuffled\nworkloads:\n  - cmd: {run: x}\n", "p.yaml:1:8: order: \"shuffled\": want random or sequential"},
		{"workloads:\n  - cmd: {run: x}\n    fs: {bs: 4k}\n", "both cmd and fs"},
		{"workloads:\n  - cmd: {run: x}\n    matrix: {n: []}\n", "p.yaml:3:17: matrix.n: want a non-empty list"},
		{"hooks: {before_all: x}\nworkloads:\n  - cmd: {run: x}\n", "p.yaml:1:9: unknown key \"before_all\" in hooks; known: before_run, after_run, before_round, after_round"},
	}
	for _, tc := range tests {
		_, err := Parse("p.yaml", []byte(tc.text))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.text, err, tc.want)
		}
	}
}

// The plan shown in the README parses.
func TestReadmePlanParses(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("no yaml block in README.md")
	}
	p, err := Parse("README.md", m[1])
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Variants) != 2 || len(p.Workloads) != 2 || p.Baseline != "main" || p.Variants[1].Env["BATCH_WRITE_ENABLED"] != "false" {
		t.Fatalf("%+v", p)
	}
}
