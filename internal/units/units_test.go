package units

import (
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
