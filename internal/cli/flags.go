package cli

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
// units.ParseDuration (finite, not negative, at most units.MaxDuration); a
// bare number counts unit (default seconds; fio's thinktime counts
// microseconds).
type durationValue struct {
	p    *time.Duration
	unit time.Duration
}

func (v durationValue) String() string {
	if v.p == nil || *v.p == 0 {
		return "0"
	}
	return v.p.String()
}
func (v durationValue) Type() string { return "duration" }
func (v durationValue) Set(s string) error {
	unit := v.unit
	if unit == 0 {
		unit = time.Second
	}
	d, err := units.ParseDurationIn(s, unit)
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
	maxConcurrency = 10_000        // requests in flight in one process (s3, http)
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
	// pflag quotes nothing: an argument with a line break in it must not
	// break the one-line message.
	return usage("%s", strings.ReplaceAll(err.Error(), "\n", `\n`))
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

// secretValue is a flag whose value is a secret (a key, a password, a
// token, a login body): it is registered with redact, and String, which
// the stored command line and help use, shows it masked.
type secretValue struct{ p *string }

func (v secretValue) String() string {
	if v.p == nil || *v.p == "" {
		return ""
	}
	return redact.Mask
}
func (v secretValue) Type() string { return "secret" }
func (v secretValue) Set(s string) error {
	*v.p = s
	redact.Secret(s)
	registerBodySecrets(s)
	return nil
}

// registerBodySecrets registers the values of a login body, JSON or a form,
// so that a reply that echoes one of them is scrubbed too.
func registerBodySecrets(body string) {
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

func secretVar(f *pflag.FlagSet, p *string, name, usage string) {
	f.Var(secretValue{p}, name, usage)
}

// urlValue is a URL flag: a password in its user information is registered
// as a secret and masked when shown.
type urlValue struct{ p *string }

func (v urlValue) String() string {
	if v.p == nil {
		return ""
	}
	return redact.URL(*v.p)
}
func (v urlValue) Type() string { return "url" }
func (v urlValue) Set(s string) error {
	*v.p = s
	redact.URL(s)
	return nil
}

// urlListValue is a repeatable URL flag kept comma-separated; passwords are
// masked as urlValue's.
type urlListValue struct{ p *string }

func (v urlListValue) String() string {
	if v.p == nil || *v.p == "" {
		return ""
	}
	parts := strings.Split(*v.p, ",")
	for i, u := range parts {
		parts[i] = redact.URL(u)
	}
	return strings.Join(parts, ",")
}
func (v urlListValue) Type() string { return "url" }
func (v urlListValue) Set(s string) error {
	for _, u := range strings.Split(s, ",") {
		redact.URL(strings.TrimSpace(u))
	}
	if *v.p != "" {
		s = *v.p + "," + s
	}
	*v.p = s
	return nil
}

func urlVar(f *pflag.FlagSet, p *string, name, usage string) {
	f.Var(urlValue{p}, name, usage)
}

// pairsValue is a repeatable "name<sep>value" flag (-H 'Name: value',
// --form key=value) whose values are masked when their names are secret
// (redact.IsSecretName, or listed in *extra: --secret-header).
type pairsValue struct {
	p     *[]string
	sep   string
	extra *[]string
}

func (v pairsValue) String() string {
	if v.p == nil || len(*v.p) == 0 {
		return "" // shown as no default in help
	}
	shown := make([]string, len(*v.p))
	for i, pair := range *v.p {
		shown[i] = v.masked(pair)
	}
	return "[" + strings.Join(shown, ",") + "]"
}

func (v pairsValue) masked(pair string) string {
	var extra []string
	if v.extra != nil {
		extra = *v.extra
	}
	return maskPair(pair, v.sep, extra)
}

// maskPair masks the value of "name<sep>value" when its name is secret, and
// registers the value with redact.
func maskPair(pair, sep string, extra []string) string {
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

func (v pairsValue) Type() string { return "stringArray" }
func (v pairsValue) Set(s string) error {
	*v.p = append(*v.p, s)
	v.masked(s) // registers the secret
	return nil
}
