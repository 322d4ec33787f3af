package plan

import (
	"strings"
	"testing"
	"time"
)

// A draft is a plan a person could have written: it parses back to the
// variants, hooks and workload it was made of, a value with YAML's
// special characters kept as written.
func TestDraftParsesBack(t *testing.T) {
	seed := uint64(7)
	d := Draft{Name: "cmd", Rounds: 4, Warmup: 1, Cooldown: time.Second, Seed: &seed, Baseline: "old", BeforeRun: "sync",
		Variants: []DraftVariant{{Name: "old", Vars: [][2]string{{"argument", "./old: -x"}}}, {Name: "new", Vars: [][2]string{{"argument", "./new #1"}}}},
		Workload: DraftWorkload{Name: "cmd", Kind: "cmd", Keys: []Key{{Name: "run", Values: []string{"{{argument}}"}}}}}
	text, err := d.Text()
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse("draft", text)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if p.Rounds != 4 || p.Warmup != 1 || p.Cooldown != time.Second || p.Seed != 7 || p.Baseline != "old" || p.Hooks.BeforeRun != "sync" {
		t.Errorf("parsed %+v from\n%s", p, text)
	}
	if len(p.Variants) != 2 || p.Variants[0].Vars["argument"] != "./old: -x" || p.Variants[1].Vars["argument"] != "./new #1" {
		t.Errorf("variants %+v from\n%s", p.Variants, text)
	}
	curve := Draft{Name: "fs", Rounds: 1, Workload: DraftWorkload{Name: "fs", Kind: "fs", Curve: []string{"50", "90"},
		Keys: []Key{{Name: "rw", Values: []string{"randread"}}, {Name: "header", Values: []string{"a: b"}, List: true}}}}
	text, err = curve.Text()
	if err != nil {
		t.Fatal(err)
	}
	if want := "curve: [\"50\", \"90\"]"; !strings.Contains(string(text), want) || !strings.Contains(string(text), "header:\n            - 'a: b'") {
		t.Errorf("a curve and a list key:\n%s", text)
	}
}
