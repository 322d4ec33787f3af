// Package units parses sizes and durations in the forms fio accepts, so that a
// fio user can type the values they already know: sizes such as 4k, 256m, 1g,
// 1MiB (binary multiples, as fio's default kb_base=1024), and durations such
// as 60 (seconds), 60s, 1m, 500ms, 1h.
package units

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

const sizeForms = "want a whole number with an optional unit such as 4k, 256m, 1g (powers of 1024)"

// ParseSize parses a byte count: a non-negative integer optionally followed by
// a unit k, m, g, t, p (any case, optionally with "b", "ib" or "iB"), all
// powers of 1024 as fio uses by default. Sizes above 2^62 are refused. The
// error says why and what would be accepted; the caller names the flag.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("empty; %s", sizeForms)
	}
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("not a size; %s", sizeForms)
	}
	shift, ok := sizeShift(strings.ToLower(t[i:]))
	if !ok {
		return 0, fmt.Errorf("unknown unit %q; %s", t[i:], sizeForms)
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil || n > (1<<62)>>shift {
		return 0, fmt.Errorf("too large; %s, at most 4096p", sizeForms)
	}
	return n << shift, nil
}

// ParseFioSize is ParseSize in fio's vocabulary: fio (in its default
// kb_base=1024) reads IEC suffixes as powers of 1000 — 4KiB is 4000
// bytes there — so a size written so is refused with both spellings,
// rather than read as another number than fio reads.
func ParseFioSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if strings.HasSuffix(t, "ib") {
		n, err := ParseSize(s)
		if err != nil {
			return 0, err
		}
		digits := strings.TrimRight(t, "kmgtpib")
		shift, _ := sizeShift(t[len(digits):])
		dec, _ := strconv.ParseInt(digits, 10, 64)
		for range shift / 10 {
			dec *= 1000
		}
		return 0, fmt.Errorf("%s is %d bytes to fio (IEC suffixes count in 1000s there) and %d to most tools: write %s for %d, or %d",
			strings.TrimSpace(s), dec, n, FormatSize(n), n, dec)
	}
	return ParseSize(s)
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

// HumanSize is a byte count for a reader: its exact form where that is
// short (4k, 256m, 10g), else three figures in the largest binary unit
// (10485696m is 10 TiB, 1000001 is 977 KiB).
func HumanSize(n int64) string {
	if exact := FormatSize(n); len(exact) <= 5 {
		return exact
	}
	v, i := float64(n), 0
	names := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	for i < len(names)-1 && math.Abs(v) >= 999.5 {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%.3g %s", v, names[i])
}

// MaxDuration is the longest duration iolab accepts anywhere: a run, a
// timeout or a cooldown of more than a year is a typo, and larger values
// overflow time.Duration.
const MaxDuration = 366 * 24 * time.Hour

const durationForms = "want seconds (60) or a value with a unit such as 60s, 1m, 500ms, 1d, at most 366d"

// ParseDuration parses a duration in fio's forms: a bare number is seconds;
// otherwise Go's forms (500ms, 60s, 1m30s, 1h) plus "d" for days. NaN,
// infinities, negative values, values above MaxDuration and positive values
// that round to nothing (1e-30) are refused. The error says why and what
// would be accepted; the caller names the flag or file position.
func ParseDuration(s string) (time.Duration, error) { return ParseDurationIn(s, time.Second) }

// ParseDurationIn is ParseDuration with a bare number counted in unit
// (time.Second or time.Microsecond) instead of seconds, as fio's thinktime
// counts microseconds.
func ParseDurationIn(s string, unit time.Duration) (time.Duration, error) {
	forms := durationForms
	if unit == time.Microsecond {
		forms = "want microseconds (100) or a value with a unit such as 100us, 10ms, 1s"
	}
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("empty; %s", forms)
	}
	if n, err := strconv.ParseFloat(t, 64); err == nil || isRangeErr(err) {
		return secondsDuration(n, float64(unit), forms)
	}
	if days, ok := strings.CutSuffix(t, "d"); ok {
		if n, err := strconv.ParseFloat(days, 64); err == nil || isRangeErr(err) {
			return secondsDuration(n, float64(24*time.Hour), forms)
		}
	}
	d, err := time.ParseDuration(t)
	switch {
	case err != nil:
		return 0, fmt.Errorf("not a duration; %s", forms)
	case d < 0:
		return 0, fmt.Errorf("negative; %s", forms)
	case d > MaxDuration:
		return 0, fmt.Errorf("too long; %s", forms)
	case d == 0 && strings.ContainsAny(t, "123456789"):
		return 0, fmt.Errorf("rounds to 0; %s", forms)
	}
	return d, nil
}

// secondsDuration turns n units of unitNs nanoseconds into a duration,
// refusing what is not finite, negative, too long or rounds to 0.
func secondsDuration(n, unitNs float64, forms string) (time.Duration, error) {
	ns := n * unitNs
	switch {
	case math.IsNaN(n) || math.IsInf(n, 0):
		return 0, fmt.Errorf("not a finite number; %s", forms)
	case n < 0:
		return 0, fmt.Errorf("negative; %s", forms)
	case ns > float64(MaxDuration):
		return 0, fmt.Errorf("too long; %s", forms)
	case n > 0 && ns < 1:
		return 0, fmt.Errorf("rounds to 0 (less than 1ns); %s", forms)
	}
	return time.Duration(ns), nil
}

func isRangeErr(err error) bool { return errors.Is(err, strconv.ErrRange) }

// ParseInt reads a whole number from min to max. Errors say why and what
// would be accepted, without the value: the caller names the flag or file
// position and the value.
func ParseInt(s string, min, max int64) (int64, error) {
	t := strings.TrimSpace(s)
	n, err := strconv.ParseInt(t, 10, 64)
	switch {
	case err != nil && isRangeErr(err):
		return 0, fmt.Errorf("out of range; %s", intRange(min, max))
	case err != nil:
		return 0, fmt.Errorf("not a whole number; %s", intRange(min, max))
	case n < min || n > max:
		return 0, fmt.Errorf("out of range; %s", intRange(min, max))
	}
	return n, nil
}

func intRange(min, max int64) string {
	if max == math.MaxInt64 {
		return fmt.Sprintf("want a whole number >= %d", min)
	}
	return fmt.Sprintf("want a whole number from %d to %d", min, max)
}

// ParseFloat reads a finite number from min to max.
func ParseFloat(s string, min, max float64) (float64, error) {
	n, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	want := fmt.Sprintf("want a number from %g to %g", min, max)
	switch {
	case err != nil && !isRangeErr(err):
		return 0, fmt.Errorf("not a number; %s", want)
	case math.IsNaN(n) || math.IsInf(n, 0):
		return 0, fmt.Errorf("not a finite number; %s", want)
	case n < min || n > max:
		return 0, fmt.Errorf("out of range; %s", want)
	}
	return n, nil
}

// Plural is "1 experiment", "2 experiments": n and the noun, with an s
// unless n is 1.
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
