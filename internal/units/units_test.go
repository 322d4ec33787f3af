package units

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{in: "4096", want: 4096},
		{in: "4k", want: 4096},
		{in: "4K", want: 4096},
		{in: "4kb", want: 4096},
		{in: "4KiB", want: 4096},
		{in: "256m", want: 256 << 20},
		{in: "1g", want: 1 << 30},
		{in: "2t", want: 2 << 40},
		{in: "0", want: 0},
		{in: "4kk", wantErr: true},
		{in: "", wantErr: true},
		{in: "k", wantErr: true},
		{in: "-4k", wantErr: true},
		{in: "1.5m", wantErr: true},
		{in: "4x", wantErr: true},
		{in: "99999999999p", wantErr: true},
	}
	for _, tc := range tests {
		got, err := ParseSize(tc.in)
		if tc.wantErr {
			if err == nil {
				t.Errorf("ParseSize(%q) = %d, want error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

func TestFormatSize(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{4096: "4k", 1 << 20: "1m", 1536: "1536", 0: "0", 3 << 30: "3g"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestHumanSize(t *testing.T) {
	for n, want := range map[int64]string{4096: "4k", 256 << 20: "256m", 10485696 << 20: "10 TiB", 1000001: "977 KiB", 999: "999", 123456: "121 KiB"} {
		if got := HumanSize(n); got != want {
			t.Errorf("HumanSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestParseDuration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{in: "60", want: 60 * time.Second},
		{in: "60s", want: 60 * time.Second},
		{in: "1m", want: time.Minute},
		{in: "500ms", want: 500 * time.Millisecond},
		{in: "1.5", want: 1500 * time.Millisecond},
		{in: "1d", want: 24 * time.Hour},
		{in: "1x", wantErr: true},
		{in: "", wantErr: true},
		{in: "-5", wantErr: true},
		{in: "0", want: 0},
		{in: "0s", want: 0},
		{in: "366d", want: MaxDuration},
		{in: "367d", wantErr: true},
		{in: "NaN", wantErr: true},
		{in: "nan", wantErr: true},
		{in: "inf", wantErr: true},
		{in: "-Inf", wantErr: true},
		{in: "1e10", wantErr: true},
		{in: "1e30", wantErr: true},
		{in: "1e400", wantErr: true},
		{in: "1e-30", wantErr: true},
		{in: "0.1ns", wantErr: true},
		{in: "NaNd", wantErr: true},
		{in: "-1d", wantErr: true},
		{in: "9999999999999999999h", wantErr: true},
		{in: "-1s", wantErr: true},
	}
	for _, tc := range tests {
		got, err := ParseDuration(tc.in)
		if tc.wantErr {
			if err == nil {
				t.Errorf("ParseDuration(%q) = %v, want error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseIntAndFloat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in       string
		min, max int64
		want     int64
		wantErr  string
	}{
		{in: "5", min: 1, max: 10, want: 5},
		{in: " 10 ", min: 1, max: 10, want: 10},
		{in: "0", min: 1, max: 10, wantErr: "out of range; want a whole number from 1 to 10"},
		{in: "-5", min: 0, max: math.MaxInt64, wantErr: "out of range; want a whole number >= 0"},
		{in: "1e3", min: 0, max: 10, wantErr: "not a whole number"},
		{in: "99999999999999999999", min: 0, max: 10, wantErr: "out of range"},
		{in: "", min: 0, max: 10, wantErr: "not a whole number"},
	} {
		got, err := ParseInt(tc.in, tc.min, tc.max)
		if tc.wantErr != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
				t.Errorf("ParseInt(%q) = %d, %v; want error %q", tc.in, got, err, tc.wantErr)
			}
		} else if err != nil || got != tc.want {
			t.Errorf("ParseInt(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"NaN", "inf", "-inf", "1e400", "-1", "101", "x"} {
		if got, err := ParseFloat(in, 0, 100); err == nil {
			t.Errorf("ParseFloat(%q) = %v, want error", in, got)
		}
	}
	if got, err := ParseFloat("2.5", 0, 100); err != nil || got != 2.5 {
		t.Errorf("ParseFloat(2.5) = %v, %v", got, err)
	}
}

// FuzzParsers: no input panics a parser, and what they accept is in range.
func FuzzParsers(f *testing.F) {
	for _, s := range []string{"4k", "1g", "60", "1.5", "1m30s", "2d", "NaN", "1e-30", "-0", "99999999999p", "1e400", "0x10", "5%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n, err := ParseSize(s); err == nil && n < 0 {
			t.Fatalf("ParseSize(%q) = %d", s, n)
		}
		if d, err := ParseDuration(s); err == nil && (d < 0 || d > MaxDuration) {
			t.Fatalf("ParseDuration(%q) = %v", s, d)
		}
		if n, err := ParseInt(s, -5, 5); err == nil && (n < -5 || n > 5) {
			t.Fatalf("ParseInt(%q) = %d", s, n)
		}
		if x, err := ParseFloat(s, 0, 1); err == nil && !(x >= 0 && x <= 1) {
			t.Fatalf("ParseFloat(%q) = %v", s, x)
		}
		if sz, err := ParseSizes(s); err == nil {
			_ = sz.String()
		}
	})
}

func TestParseDurationIn(t *testing.T) {
	for in, want := range map[string]time.Duration{"100": 100 * time.Microsecond, "1.5": 1500 * time.Nanosecond, "10ms": 10 * time.Millisecond} {
		if got, err := ParseDurationIn(in, time.Microsecond); err != nil || got != want {
			t.Errorf("ParseDurationIn(%q, µs) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseDurationIn("-1", time.Microsecond); err == nil || !strings.Contains(err.Error(), "want microseconds") {
		t.Errorf("negative: %v", err)
	}
}

func TestPlural(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]string{0: "0 experiments", 1: "1 experiment", 2: "2 experiments"} {
		if got := Plural(n, "experiment"); got != want {
			t.Errorf("Plural(%d) = %q, want %q", n, got, want)
		}
	}
}

// A range with a bad end says which end, on one line.
func TestSizesRangeEnds(t *testing.T) {
	for in, want := range map[string]string{"A-": `"A", the range's low end: not a size`, "1k-": `"", the range's high end: empty`} {
		_, err := ParseSizes(in)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v, want one line with %q", in, err, want)
		}
	}
}
