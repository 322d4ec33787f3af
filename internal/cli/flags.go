package cli

import (
	"fmt"
	"strconv"
	"time"

	"github.com/iolab/iolab/internal/units"
)

// sizeValue is a byte count flag in fio's forms (4k, 256m, 1g).
type sizeValue struct{ p *int64 }

func (v sizeValue) String() string {
	if v.p == nil {
		return "0"
	}
	return units.FormatSize(*v.p)
}
func (v sizeValue) Type() string { return "size" }
func (v sizeValue) Set(s string) error {
	n, err := units.ParseSize(s)
	if err != nil {
		return err
	}
	*v.p = n
	return nil
}

// durationValue is a duration flag in fio's forms (60, 60s, 1m).
type durationValue struct{ p *time.Duration }

func (v durationValue) String() string {
	if v.p == nil || *v.p == 0 {
		return "0"
	}
	return v.p.String()
}
func (v durationValue) Type() string { return "duration" }
func (v durationValue) Set(s string) error {
	d, err := units.ParseDuration(s)
	if err != nil {
		return err
	}
	*v.p = d
	return nil
}

// boolIntValue is fio's 0/1 switch: --direct, --direct=1, --direct=0.
type boolIntValue struct{ p *bool }

func (v boolIntValue) String() string {
	if v.p != nil && *v.p {
		return "1"
	}
	return "0"
}
func (v boolIntValue) Type() string { return "0|1" }
func (v boolIntValue) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("%q: want 1 or 0", s)
	}
	*v.p = b
	return nil
}
