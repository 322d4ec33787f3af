package httpload

import (
	"encoding/base64"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/iolab/iolab/internal/driver"
	"github.com/iolab/iolab/internal/flagval"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/redact"
	"github.com/iolab/iolab/internal/units"
	"github.com/iolab/iolab/internal/workload"
)

func init() {
	workload.Register(workload.Kind{
		Name:       "http",
		Short:      "HTTP uploads and downloads of bodies of any size, streamed",
		NewOptions: func() workload.Options { return &planFlags{Flags: Flags{Mode: Upload}} },
		Splits:     true,
		Templates:  []string{"i", "worker", "id"},
		PathKeys:   []string{"url-file", "id-file"},
		Primary:    "bytes_per_s",
		Metrics:    []string{"bytes_per_s", "upload.lat_p99_ns", "download.lat_p99_ns", "download.ttfb_p99_ns", "upload.response_p99_ns", "download.response_p99_ns"},
	})
}

// Flags are the http workload's options: the flags of `iolab http
// upload|download` and the keys of a plan's http: workload, declared once.
type Flags struct {
	Job     Options
	Mode    string // Upload or Download
	sizes   string
	headers []string
	secret  []string // more header names whose values are secrets
	form    []string
	zeros   bool
}

// AddFlags registers the workload's options: the flags of `iolab http
// upload|download`, and with --mode the keys of a plan's http: workload.
func (o *Flags) AddFlags(f *pflag.FlagSet) {
	o.Job = DefaultOptions()
	j := &o.Job
	flagval.URLVar(f, &j.URL, "url", "URL template; {{i}} is the operation's index, {{worker}} the worker's")
	f.StringVar(&j.URLFile, "url-file", "", "download: a file of URLs, one per line, used in turn")
	f.StringVar(&j.IDFile, "id-file", "", "download: a file of ids (what uploads returned), one per line, filling --url's {{id}} in turn")
	f.StringVar(&j.Method, "method", j.Method, "upload: PUT or POST")
	f.StringVar(&j.FormField, "form-field", "", "upload the body as this file field of a multipart form")
	f.Var(flagval.Pairs{P: &o.form, Sep: "=", Extra: &o.secret}, "form", "extra form field key=value (repeatable)")
	f.VarP(flagval.Pairs{P: &o.headers, Sep: ":", Extra: &o.secret}, "header", "H", "request header 'Name: value' (repeatable); values of Authorization, Cookie, *-Key, *Token* and --secret-header names are never stored or printed")
	f.StringArrayVar(&o.secret, "secret-header", nil, "a header or form field name whose value is a secret, besides the usual ones (repeatable)")
	flagval.SecretVar(f, &j.Basic, "basic", "basic auth user:password; never stored or printed")
	flagval.SecretVar(f, &j.Bearer, "bearer", "bearer token (default: $IOLAB_HTTP_TOKEN); never stored or printed")
	flagval.URLVar(f, &j.LoginURL, "login-url", "POST here first; its cookies go with every request")
	flagval.SecretVar(f, &j.LoginBody, "login-body", "login body: JSON when it starts with {, else a form (user=a&secret=b); never stored or printed")
	f.StringVar(&j.LoginToken, "login-token", "", "JSON field of the login response to send as a bearer token")
	f.StringVar(&j.IDFromJSON, "id-from-json", "", "upload: JSON field of the response naming what was stored (data.id)")
	flagval.URLVar(f, &j.DownloadURL, "download-url", "upload: download each upload right after, from this URL with {{id}}")
	f.Var(flagval.Size{P: &j.RangeSize}, "range-size", "download: a random range of this many bytes (needs --size of the objects)")
	f.StringVar(&o.sizes, "size", "", "body size: 8m, a list 1m,100m, or a log-uniform range 1m-5g (default 1m for uploads; a download gets what the server sends, and needs the objects' size only for --range-size or --verify)")
	flagval.IntVar(f, &j.Concurrency, "concurrency", j.Concurrency, 1, flagval.MaxConcurrency, "requests in flight")
	f.Var(flagval.Duration{P: &j.Runtime}, "runtime", "duration of each run (60, 60s, 1m)")
	flagval.IntVar(f, &j.Count, "count", 0, 0, flagval.MaxCount, "requests per run when not time-based")
	flagval.IntVar(f, &j.MaxConcurrency, "max-concurrency", 0, 0, flagval.MaxConcurrency, "with --rate: add workers, up to this many, when a request is due and none is free (k6's maxVUs; 0: --concurrency, none added)")
	flagval.FloatVar(f, &j.Rate, "rate", 0, 0, flagval.MaxRate, "requests per second across all workers, on a fixed schedule (0: as fast as they go); each then has a response time from its place on the schedule beside its service time")
	f.Var(&j.RateProcess, "rate-process", driver.ProcessUsage)
	flagval.PercentVar(f, &j.Data.CompressPct, "compressible", 0, "percentage of each body that compresses (zeros)")
	f.BoolVar(&o.zeros, "zeros", false, "bodies of zeros")
	f.BoolVar(&j.HTTP2, "http2", false, "HTTP/2 over TLS")
	f.BoolVar(&j.H2C, "h2c", false, "HTTP/2 without TLS")
	f.BoolVar(&j.Insecure, "insecure", false, "accept any TLS certificate")
	f.BoolVar(&j.Verify, "verify", false, "download: compare every byte, as it arrives, with what the upload of the same index sent (ranges too); a byte that differs fails the download, naming its offset")
	f.BoolVar(&j.Verify, "check-reads", false, "the same as --verify, by the name s3 gives it")
	f.Var(flagval.Duration{P: &j.Timeout}, "timeout", "per request")
}

// ModeOnly names the options that mean something in one mode only, with
// that mode: `iolab http` shows each only where it applies, and either mode
// refuses the other's.
var ModeOnly = map[string]string{}

// modeOnly declares each mode-only option once: its mode, and whether the
// flags set it (a value other than its default).
var modeOnly = map[string]struct {
	mode string
	set  func(o *Flags) bool
}{
	"method":       {Upload, func(o *Flags) bool { return o.Job.Method != DefaultOptions().Method }},
	"form-field":   {Upload, func(o *Flags) bool { return o.Job.FormField != "" }},
	"form":         {Upload, func(o *Flags) bool { return len(o.form) > 0 }},
	"id-from-json": {Upload, func(o *Flags) bool { return o.Job.IDFromJSON != "" }},
	"download-url": {Upload, func(o *Flags) bool { return o.Job.DownloadURL != "" }},
	"url-file":     {Download, func(o *Flags) bool { return o.Job.URLFile != "" }},
	"id-file":      {Download, func(o *Flags) bool { return o.Job.IDFile != "" }},
	"range-size":   {Download, func(o *Flags) bool { return o.Job.RangeSize != 0 }},
}

func init() {
	for name, m := range modeOnly {
		ModeOnly[name] = m.mode
	}
}

// otherMode is the first option set that belongs to the other mode.
func (o *Flags) otherMode() string {
	for _, name := range slices.Sorted(maps.Keys(modeOnly)) {
		if m := modeOnly[name]; m.mode != o.Mode && m.set(o) {
			return name
		}
	}
	return ""
}

// Options resolves the parsed flags into the workload's options, for an
// upload or a download (Mode).
func (o *Flags) Options() (Options, error) {
	j := o.Job
	j.Mode = o.Mode
	if name := o.otherMode(); name != "" {
		return j, fmt.Errorf("--%s is an option of http %s, not of %s", name, ModeOnly[name], o.Mode)
	}
	var err error
	switch {
	case o.sizes != "":
		if j.Sizes, err = units.ParseSizes(o.sizes); err != nil {
			return j, fmt.Errorf("--size %w", err)
		}
	case j.Mode == Upload:
		j.Sizes = units.Sizes{Fixed: []int64{DefaultUploadSize}}
	case j.RangeSize > 0 || j.Verify:
		return j, fmt.Errorf("--size: a download with --range-size or --verify needs the size of the objects it reads (what their upload sent: 8m, or a list or range as the upload's --size)")
	default:
		j.Sizes = units.Sizes{} // what the server sends
	}
	j.Data.Zeros = o.zeros
	if j.Bearer == "" {
		j.Bearer = os.Getenv("IOLAB_HTTP_TOKEN")
		redact.Secret(j.Bearer)
	}
	if j.Basic != "" { // as it travels, in an Authorization header a server may echo
		redact.Secret(base64.StdEncoding.EncodeToString([]byte(j.Basic)))
	}
	j.Headers = http.Header{}
	for _, h := range o.headers {
		k, v, ok := strings.Cut(h, ":")
		if !ok {
			return j, fmt.Errorf("-H: a header without a colon; want 'Name: value'")
		}
		flagval.MaskPair(h, ":", o.secret) // registers a secret value
		j.Headers.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	j.Form = map[string]string{}
	for _, kv := range o.form {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return j, fmt.Errorf("--form: a field without =; want key=value")
		}
		flagval.MaskPair(kv, "=", o.secret)
		j.Form[k] = v
	}
	return j, nil
}

// Build implements workload.Options.
func (o *Flags) Build(b workload.Build) (workload.Workload, string, error) {
	job, err := o.Options()
	if err != nil {
		return nil, "", err
	}
	job.KeepIDs, job.Segment = b.Setup, b.Segment
	w, err := New(job)
	return w, b.Dir, err
}

// planFlags are a plan's http keys: the command's flags and its mode,
// which on the command line is the subcommand.
type planFlags struct{ Flags }

func (o *planFlags) AddFlags(f *pflag.FlagSet) {
	o.Flags.AddFlags(f)
	f.StringVar(&o.Mode, "mode", o.Mode, "upload or download")
}

// PacedLater implements workload.Pacer.
func (o *Flags) PacedLater() { o.Job.PacedLater = true }

// FlatOut implements workload.Pacer.
func (o *Flags) FlatOut() { o.Job.RateProcess, o.Job.MaxConcurrency = driver.Linear, 0 }

// PaceKey implements workload.Pacer.
func (o *Flags) PaceKey() string { return "rate" }

// AtLeast implements workload.Lengthener: a paced run of a runtime holds
// at least ops requests at its rate, up to workload.MaxLengthened times the runtime
// asked (the rate is the search's; a count is the user's, and stays).
func (o *Flags) AtLeast(ops int64) bool {
	if o.Job.Count > 0 {
		return false
	}
	var longer bool
	o.Job.Runtime, longer = workload.Lengthened(o.Job.Runtime, o.Job.Rate, ops)
	return longer
}

// Pace implements workload.Pacer: requests per second across all
// workers, share of what max did in all.
func (o *Flags) Pace(max *metrics.Result, share float64) {
	o.Job.Rate = share * max.PerSecond(max.Ops())
}
