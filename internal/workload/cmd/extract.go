package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Metric is a figure a command prints: found in its output lines (stdout
// and stderr) by a regular expression or by a JSON field, the last match
// of a run counting, times Scale.
type Metric struct {
	Name string
	// Regex finds the value: its first group, else the whole match.
	Regex *regexp.Regexp
	// JSONKey and JSONValue select JSON lines (an object whose JSONKey is
	// JSONValue; any JSON object with Field when JSONKey is ""); Field is
	// the field holding the value.
	JSONKey, JSONValue, Field string
	Scale                     float64
}

// maxLine bounds a line the extractor holds; the rest of a longer line
// is not searched.
const maxLine = 1 << 20

// extractor reads one output stream of a command, line by line, for its
// metrics, keeping nothing but the line being written; the streams of a
// run share their findings.
type extractor struct {
	found *findings
	line  []byte
}

// findings are what a run's streams found.
type findings struct {
	mu      sync.Mutex
	metrics []Metric
	values  map[string]float64
	err     error // the first line that matched but did not parse
}

func newFindings(ms []Metric) *findings {
	return &findings{metrics: ms, values: map[string]float64{}}
}

// Write implements io.Writer.
func (e *extractor) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if room := maxLine - len(e.line); room > 0 {
			e.line = append(e.line, chunk[:min(len(chunk), room)]...)
		}
		if i < 0 {
			break
		}
		e.scan()
		p = p[i+1:]
	}
	return n, nil
}

func (e *extractor) scan() {
	line := strings.TrimRight(string(e.line), "\r")
	e.line = e.line[:0]
	f := e.found
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.metrics {
		v, matched, err := m.read(line)
		switch {
		case err != nil && f.err == nil:
			f.err = fmt.Errorf("metric %s: the line %q matched %s, but %v", m.Name, clip(line), m.describe(), err)
		case matched && err == nil:
			f.values[m.Name] = v * m.Scale
		}
	}
}

// finish scans the streams' last lines without a newline and says what
// is missing or could not be read.
func (f *findings) finish(streams ...*extractor) (map[string]float64, error) {
	for _, e := range streams {
		if len(e.line) > 0 {
			e.scan()
		}
	}
	if f.err != nil {
		return nil, f.err
	}
	for _, m := range f.metrics {
		if _, ok := f.values[m.Name]; !ok {
			return nil, fmt.Errorf("metric %s: no output line matched %s", m.Name, m.describe())
		}
	}
	return f.values, nil
}

// read is the metric's value on line, if the line is one of its.
func (m Metric) read(line string) (float64, bool, error) {
	if m.Regex != nil {
		sub := m.Regex.FindStringSubmatch(line)
		if sub == nil {
			return 0, false, nil
		}
		text := sub[0]
		if len(sub) > 1 {
			text = sub[1]
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
		if err != nil {
			return 0, true, fmt.Errorf("%q is not a number", text)
		}
		return v, true, nil
	}
	trimmed := strings.TrimSpace(line)
	if !strings.HasPrefix(trimmed, "{") {
		return 0, false, nil
	}
	var obj map[string]any
	if json.Unmarshal([]byte(trimmed), &obj) != nil {
		return 0, false, nil
	}
	if m.JSONKey != "" && fmt.Sprint(obj[m.JSONKey]) != m.JSONValue {
		return 0, false, nil
	}
	raw, ok := obj[m.Field]
	if !ok {
		if m.JSONKey == "" {
			return 0, false, nil
		}
		return 0, true, fmt.Errorf("it has no field %q", m.Field)
	}
	switch v := raw.(type) {
	case float64:
		return v, true, nil
	case string:
		if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
			return f, true, nil
		}
	}
	return 0, true, fmt.Errorf("its %s is %v, not a number", m.Field, raw)
}

func (m Metric) describe() string {
	switch {
	case m.Regex != nil:
		return fmt.Sprintf("regex %q", m.Regex.String())
	case m.JSONKey != "":
		return fmt.Sprintf("json %s=%q (field %s)", m.JSONKey, m.JSONValue, m.Field)
	}
	return fmt.Sprintf("json (field %s)", m.Field)
}

// clip shortens a line for a message.
func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}
