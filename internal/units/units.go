// Package units parses sizes and durations in the forms fio accepts, so that a
// fio user can type the values they already know: sizes such as 4k, 256m, 1g,
// 1MiB (binary multiples, as fio's default kb_base=1024), and durations such
// as 60 (seconds), 60s, 1m, 500ms, 1h.
package units

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseSize parses a byte count: a non-negative integer optionally followed by
// a unit k, m, g, t, p (any case, optionally with "b", "ib" or "iB"), all
// powers of 1024 as fio uses by default.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("empty size; want a number with an optional unit such as 4k, 256m, 1g")
	}
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("size %q: want a number with an optional unit such as 4k, 256m, 1g", s)
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: %w", s, err)
	}
	shift, ok := sizeShift(strings.ToLower(t[i:]))
	if !ok {
		return 0, fmt.Errorf("size %q: unknown unit %q; want one of b, k, m, g, t, p (optionally with b, ib)", s, t[i:])
	}
	if shift > 0 && n > (1<<62)>>shift {
		return 0, fmt.Errorf("size %q: too large", s)
	}
	return n << shift, nil
}

func sizeShift(unit string) (uint, bool) {
	if unit == "" || unit == "b" {
		return 0, true
	}
	unit = strings.TrimSuffix(strings.TrimSuffix(unit, "b"), "i")
	shifts := map[string]uint{"k": 10, "m": 20, "g": 30, "t": 40, "p": 50}
	s, ok := shifts[unit]
	return s, ok
}

// FormatSize renders a byte count with a binary unit, the inverse of
// ParseSize for exact multiples (4096 -> "4k").
func FormatSize(n int64) string {
	units := []string{"", "k", "m", "g", "t", "p"}
	i := 0
	for n != 0 && n%1024 == 0 && i < len(units)-1 {
		n /= 1024
		i++
	}
	return strconv.FormatInt(n, 10) + units[i]
}

// ParseDuration parses a duration in fio's forms: a bare number is seconds;
// otherwise Go's forms (500ms, 60s, 1m30s, 1h) plus "d" for days.
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("empty duration; want seconds (60) or a value with a unit such as 60s, 1m, 500ms")
	}
	if n, err := strconv.ParseFloat(t, 64); err == nil {
		if n < 0 {
			return 0, fmt.Errorf("duration %q is negative", s)
		}
		return time.Duration(n * float64(time.Second)), nil
	}
	if strings.HasSuffix(t, "d") {
		n, err := strconv.ParseFloat(strings.TrimSuffix(t, "d"), 64)
		if err == nil && n >= 0 {
			return time.Duration(n * 24 * float64(time.Hour)), nil
		}
	}
	d, err := time.ParseDuration(t)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("duration %q: want seconds (60) or a value with a unit such as 60s, 1m, 500ms", s)
	}
	return d, nil
}
