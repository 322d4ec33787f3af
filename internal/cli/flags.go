package cli

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/iolab/iolab/internal/units"
)

// Every number a flag (or a plan key, which goes through the same flags)
// takes is range-checked here, when it is parsed: the flag types below carry
// their bounds, and a value outside them is refused as
// `--flag "value": why; want ...` (flagError) before anything runs.
// Workloads check only what spans several options.

// sizeValue is a byte count flag in fio's forms (4k, 256m, 1g), from min to
// max bytes (max 0: no bound beyond ParseSize's).
type sizeValue struct {
	p        *int64
	min, max int64
}

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
	if n < v.min || (v.max > 0 && n > v.max) {
		if v.max > 0 {
			return fmt.Errorf("out of range; want a size from %s to %s", units.FormatSize(v.min), units.FormatSize(v.max))
		}
		return fmt.Errorf("out of range; want a size of at least %s", units.FormatSize(v.min))
	}
	*v.p = n
	return nil
}

// durationValue is a duration flag in fio's forms (60, 60s, 1m), checked by
// units.ParseDuration (finite, not negative, at most units.MaxDuration).
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
		return fmt.Errorf("want 1 or 0")
	}
	*v.p = b
	return nil
}

// intValue is a whole-number flag from min to max.
type intValue[T int | int64 | uint64] struct {
	p        *T
	min, max int64
}

func (v intValue[T]) String() string {
	if v.p == nil {
		return "0"
	}
	return fmt.Sprint(*v.p)
}
func (v intValue[T]) Type() string { return "int" }
func (v intValue[T]) Set(s string) error {
	n, err := units.ParseInt(s, v.min, v.max)
	if err != nil {
		return err
	}
	*v.p = T(n)
	return nil
}

// intVar registers a whole-number flag with its default and bounds.
func intVar[T int | int64 | uint64](f *pflag.FlagSet, p *T, name string, def T, min, max int64, usage string) {
	*p = def
	f.Var(intValue[T]{p: p, min: min, max: max}, name, usage)
}

// percentVar registers a percentage flag: a whole number from 0 to 100.
func percentVar(f *pflag.FlagSet, p *int, name string, def int, usage string) {
	intVar(f, p, name, def, 0, 100, usage)
}

// floatValue is a finite number flag from min to max.
type floatValue struct {
	p        *float64
	min, max float64
}

func (v floatValue) String() string {
	if v.p == nil {
		return "0"
	}
	return strconv.FormatFloat(*v.p, 'g', -1, 64)
}
func (v floatValue) Type() string { return "float" }
func (v floatValue) Set(s string) error {
	n, err := units.ParseFloat(s, v.min, v.max)
	if err != nil {
		return err
	}
	*v.p = n
	return nil
}

func floatVar(f *pflag.FlagSet, p *float64, name string, def, min, max float64, usage string) {
	*p = def
	f.Var(floatValue{p: p, min: min, max: max}, name, usage)
}

// Bounds shared by several commands.
const (
	maxConcurrency = 100_000       // operations in flight in one process
	maxCount       = math.MaxInt32 // operations per run when counted
	maxRate        = 1e9           // operations per second
)

// flagError rewrites pflag's "invalid argument" errors into iolab's one
// form, `--flag "value": why; want ...`, a usage error.
func flagError(err error) error {
	var iv *pflag.InvalidValueError
	if errors.As(err, &iv) {
		return usage("--%s %q: %v", iv.GetFlag().Name, iv.GetValue(), iv.Unwrap())
	}
	return &UsageError{Err: err}
}

// setFlag sets a flag the way a plan or a job file does, returning only why
// a value was refused: the caller names the place (file:line:column).
func setFlag(f *pflag.FlagSet, name, value string) error {
	err := f.Set(name, value)
	var iv *pflag.InvalidValueError
	if errors.As(err, &iv) {
		return iv.Unwrap()
	}
	return err
}
