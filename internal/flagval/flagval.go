// Package flagval holds the value types of iolab's flags — and so of plan
// keys, which are set through the same flags: sizes, durations and numbers
// in fio's forms with their bounds checked as they are parsed, and secrets
// (keys, passwords, tokens, URLs with a password, secret headers) that are
// registered with redact the moment they are set and shown masked.
package flagval

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/iolab/iolab/internal/redact"
	"github.com/iolab/iolab/internal/units"
)

// Every number a flag (or a plan key, which goes through the same flags)
// takes is range-checked here, when it is parsed: the flag types below carry
// their bounds, and a value outside them is refused as
// `--flag "value": why; want ...` (flagError) before anything runs.
// Workloads keep their own checks, for options built in code, and those
// that span several options.

// Size is a byte count flag in fio's forms (4k, 256m, 1g), from min to
// max bytes (max 0: no bound beyond ParseSize's).
type Size struct {
	P        *int64
	Min, Max int64
	// Fio reads it as fio does (units.ParseFioSize).
	Fio bool
}

func (v Size) String() string {
	if v.P == nil {
		return "0"
	}
	return units.FormatSize(*v.P)
}
func (v Size) Type() string { return "size" }
func (v Size) Set(s string) error {
	parse := units.ParseSize
	if v.Fio {
		parse = units.ParseFioSize
	}
	n, err := parse(s)
	if err != nil {
		return err
	}
	if n < v.Min || (v.Max > 0 && n > v.Max) {
		if v.Max > 0 {
			return fmt.Errorf("out of range; want a size from %s to %s", units.FormatSize(v.Min), units.FormatSize(v.Max))
		}
		return fmt.Errorf("out of range; want a size of at least %s", units.FormatSize(v.Min))
	}
	*v.P = n
	return nil
}

// Duration is a duration flag in fio's forms (60, 60s, 1m), checked by
// units.ParseDuration (finite, not negative, at most units.MaxDuration); a
// bare number counts unit (default seconds; fio's thinktime counts
// microseconds).
type Duration struct {
	P    *time.Duration
	Unit time.Duration
}

func (v Duration) String() string {
	if v.P == nil || *v.P == 0 {
		return "0"
	}
	return v.P.String()
}
func (v Duration) Type() string { return "duration" }
func (v Duration) Set(s string) error {
	unit := v.Unit
	if unit == 0 {
		unit = time.Second
	}
	d, err := units.ParseDurationIn(s, unit)
	if err != nil {
		return err
	}
	*v.P = d
	return nil
}

// BoolInt is fio's 0/1 switch: --direct, --direct=1, --direct=0. Not: *P
// is the switch's opposite (fio's randrepeat=0 sets NoRandRepeat).
type BoolInt struct {
	P   *bool
	Not bool
}

func (v BoolInt) String() string {
	if v.P != nil && *v.P != v.Not {
		return "1"
	}
	return "0"
}
func (v BoolInt) Type() string { return "0|1" }
func (v BoolInt) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("want 1 or 0")
	}
	*v.P = b != v.Not
	return nil
}

// Int is a whole-number flag from min to max.
type Int[T int | int64 | uint64] struct {
	P        *T
	Min, Max int64
}

func (v Int[T]) String() string {
	if v.P == nil {
		return "0"
	}
	return fmt.Sprint(*v.P)
}
func (v Int[T]) Type() string { return "int" }
func (v Int[T]) Set(s string) error {
	n, err := units.ParseInt(s, v.Min, v.Max)
	if err != nil {
		return err
	}
	*v.P = T(n)
	return nil
}

// IntVar registers a whole-number flag with its default and bounds.
func IntVar[T int | int64 | uint64](f *pflag.FlagSet, p *T, name string, def T, min, max int64, usage string) {
	*p = def
	f.Var(Int[T]{P: p, Min: min, Max: max}, name, usage)
}

// PercentVar registers a percentage flag: a whole number from 0 to 100.
func PercentVar(f *pflag.FlagSet, p *int, name string, def int, usage string) {
	IntVar(f, p, name, def, 0, 100, usage)
}

// Float is a finite number flag from min to max.
type Float struct {
	P        *float64
	Min, Max float64
}

func (v Float) String() string {
	if v.P == nil {
		return "0"
	}
	return strconv.FormatFloat(*v.P, 'g', -1, 64)
}
func (v Float) Type() string { return "float" }
func (v Float) Set(s string) error {
	n, err := units.ParseFloat(s, v.Min, v.Max)
	if err != nil {
		return err
	}
	*v.P = n
	return nil
}

func FloatVar(f *pflag.FlagSet, p *float64, name string, def, min, max float64, usage string) {
	*p = def
	f.Var(Float{P: p, Min: min, Max: max}, name, usage)
}

// MaxSpan is the longest a paced schedule may take when no runtime bounds
// it (--fps with --frames, --rate with --count).
const MaxSpan = 24 * time.Hour

// CheckPeriod refuses a rate (operations, frames or blocks per second)
// that cannot mean what was asked: its period — one every 1/perSecond
// seconds — longer than the runtime, or, with a count and no runtime, a
// schedule longer than MaxSpan. Every paced workload asks it, so a rate is
// judged alike everywhere; 0 (no pacing) passes.
func CheckPeriod(flag string, perSecond float64, runtime time.Duration, count int64) error {
	if perSecond <= 0 {
		return nil
	}
	period := 1 / perSecond // seconds
	switch {
	case runtime > 0 && period > runtime.Seconds():
		return fmt.Errorf("%s %g: one every %s, longer than the run (--runtime %v); give at least %.3g", flag, perSecond,
			spell(period), runtime, 1/runtime.Seconds())
	case runtime <= 0 && count > 0 && float64(count)*period > MaxSpan.Seconds():
		return fmt.Errorf("%s %g for %d: a schedule of %s, longer than the %v iolab allows; give at least %.3g", flag, perSecond, count,
			spell(float64(count)*period), MaxSpan, float64(count)/MaxSpan.Seconds())
	}
	return nil
}

// spell says a number of seconds as a duration, however large.
func spell(s float64) string {
	if s > float64(math.MaxInt64)/1e9 {
		return fmt.Sprintf("%.3g s", s)
	}
	return time.Duration(s * 1e9).Round(time.Millisecond).String()
}

// Bounds shared by several commands.
const (
	MaxConcurrency = 10_000        // requests in flight in one process (s3, http)
	MaxCount       = math.MaxInt32 // operations per run when counted
	MaxRate        = 1e9           // operations per second
)

// Set sets a flag the way a plan or a job file does, returning only why
// a value was refused: the caller names the place (file:line:column).
func Set(f *pflag.FlagSet, name, value string) error {
	err := f.Set(name, value)
	var iv *pflag.InvalidValueError
	if errors.As(err, &iv) {
		return iv.Unwrap()
	}
	return err
}

// Secret is a flag whose value is a secret (a key, a password, a
// token, a login body): it is registered with redact, and String, which
// the stored command line and help use, shows it masked.
type Secret struct{ P *string }

func (v Secret) String() string {
	if v.P == nil || *v.P == "" {
		return ""
	}
	return redact.Mask
}
func (v Secret) Type() string { return "secret" }

// Secrets says what secrets a flag holds, for what must not be written
// where others read it (a Kubernetes Job's args).
type Secrets interface{ Secrets() []string }

func (v Secret) Secrets() []string {
	if *v.P == "" {
		return nil
	}
	return []string{*v.P}
}

func (v URL) Secrets() []string { return redact.URLSecrets(*v.P) }

func (v URLList) Secrets() []string {
	var out []string
	for _, u := range strings.Split(*v.P, ",") {
		out = append(out, redact.URLSecrets(strings.TrimSpace(u))...)
	}
	return out
}

func (v Pairs) Secrets() []string {
	var extra []string
	if v.Extra != nil {
		extra = *v.Extra
	}
	var out []string
	for _, pair := range *v.P {
		if name, value, ok := strings.Cut(pair, v.Sep); ok && redact.IsSecretName(strings.TrimSpace(name), extra...) {
			out = append(out, strings.TrimSpace(value))
		}
	}
	return out
}
func (v Secret) Set(s string) error {
	*v.P = s
	redact.Secret(s)
	RegisterBodySecrets(s)
	return nil
}

// RegisterBodySecrets registers the values of a login body, JSON or a form,
// so that a reply that echoes one of them is scrubbed too.
func RegisterBodySecrets(body string) {
	var doc any
	if json.Unmarshal([]byte(body), &doc) == nil {
		var walk func(any)
		walk = func(x any) {
			switch x := x.(type) {
			case map[string]any:
				for _, v := range x {
					walk(v)
				}
			case []any:
				for _, v := range x {
					walk(v)
				}
			case string:
				redact.Secret(x)
			}
		}
		walk(doc)
		return
	}
	if form, err := url.ParseQuery(body); err == nil {
		for _, vs := range form {
			redact.Secret(vs...)
		}
	}
}

func SecretVar(f *pflag.FlagSet, p *string, name, usage string) {
	f.Var(Secret{p}, name, usage)
}

// URL is a URL flag: a password in its user information is registered
// as a secret and masked when shown.
type URL struct{ P *string }

func (v URL) String() string {
	if v.P == nil {
		return ""
	}
	return redact.URL(*v.P)
}
func (v URL) Type() string { return "url" }
func (v URL) Set(s string) error {
	*v.P = s
	redact.URL(s)
	return nil
}

// URLList is a repeatable URL flag kept comma-separated; passwords are
// masked as URL's.
type URLList struct{ P *string }

func (v URLList) String() string {
	if v.P == nil || *v.P == "" {
		return ""
	}
	parts := strings.Split(*v.P, ",")
	for i, u := range parts {
		parts[i] = redact.URL(u)
	}
	return strings.Join(parts, ",")
}
func (v URLList) Type() string { return "url" }
func (v URLList) Set(s string) error {
	for _, u := range strings.Split(s, ",") {
		redact.URL(strings.TrimSpace(u))
	}
	if *v.P != "" {
		s = *v.P + "," + s
	}
	*v.P = s
	return nil
}

func URLVar(f *pflag.FlagSet, p *string, name, usage string) {
	f.Var(URL{p}, name, usage)
}

// Pairs is a repeatable "name<sep>value" flag (-H 'Name: value',
// --form key=value) whose values are masked when their names are secret
// (redact.IsSecretName, or listed in *extra: --secret-header).
type Pairs struct {
	P     *[]string
	Sep   string
	Extra *[]string
}

func (v Pairs) String() string {
	if v.P == nil || len(*v.P) == 0 {
		return "" // shown as no default in help
	}
	shown := make([]string, len(*v.P))
	for i, pair := range *v.P {
		shown[i] = v.masked(pair)
	}
	return "[" + strings.Join(shown, ",") + "]"
}

func (v Pairs) masked(pair string) string {
	var extra []string
	if v.Extra != nil {
		extra = *v.Extra
	}
	return MaskPair(pair, v.Sep, extra)
}

// MaskPair masks the value of "name<sep>value" when its name is secret, and
// registers the value with redact.
func MaskPair(pair, sep string, extra []string) string {
	name, value, ok := strings.Cut(pair, sep)
	if !ok || !redact.IsSecretName(strings.TrimSpace(name), extra...) {
		return pair
	}
	value = strings.TrimSpace(value)
	redact.Secret(value)
	if fields := strings.Fields(value); len(fields) > 1 {
		redact.Secret(fields[len(fields)-1]) // the token of "Bearer TOKEN"
	}
	return name + sep + " " + redact.Mask
}

func (v Pairs) Type() string { return "stringArray" }
func (v Pairs) Set(s string) error {
	*v.P = append(*v.P, s)
	v.masked(s) // registers the secret
	return nil
}

// Given is a flag whose value, as String shows it, is masked or joined
// (a secret, a URL with a password, -H pairs): Given is what was set,
// each value once, for what hands the flags on as they were given (a plan
// made of a command's flags, redacted where it is stored).
type Given interface{ Given() []string }

func (v Secret) Given() []string  { return []string{*v.P} }
func (v URL) Given() []string     { return []string{*v.P} }
func (v URLList) Given() []string { return []string{*v.P} }
func (v Pairs) Given() []string   { return *v.P }

// Repeatable says whether a flag may be given more than once (-H), so a
// plan key may be a list.
func Repeatable(f *pflag.Flag) bool {
	if _, ok := f.Value.(pflag.SliceValue); ok {
		return true
	}
	_, ok := f.Value.(Pairs)
	return ok
}
