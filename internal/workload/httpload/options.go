package httpload

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/iolab/iolab/internal/datagen"
	"github.com/iolab/iolab/internal/driver"
	"github.com/iolab/iolab/internal/flagval"
	"github.com/iolab/iolab/internal/segment"
	"github.com/iolab/iolab/internal/units"
)

// Modes.
const (
	Upload   = "upload"
	Download = "download"
)

// Options is one HTTP workload.
type Options struct {
	Mode string
	// URL is a template: {{i}} is the operation's index in the run,
	// {{worker}} the worker's.
	URL string
	// URLFile, for downloads, is a file of URLs used in turn instead of
	// URL; IDFile a file of ids (what uploads returned), one per line,
	// that fill URL's {{id}} in turn. Both are read by Prepare: a setup
	// step may write them just before.
	URLFile   string
	IDFile    string
	Method    string // upload: PUT or POST
	FormField string // upload the body as this file field of a multipart form
	Form      map[string]string
	Headers   http.Header
	Basic     string // user:password
	Bearer    string

	// A login before the runs: its cookies, or the token at LoginToken
	// (a JSON field path) as a bearer token, go with every request.
	LoginURL   string
	LoginBody  string
	LoginToken string

	// IDFromJSON is the JSON field path of an upload's response that names
	// what was stored; DownloadURL, with {{id}}, downloads it right after.
	IDFromJSON  string
	DownloadURL string

	// KeepIDs makes an upload run keep what each upload returned (the
	// --id-from-json field, else the operation's index), in index order,
	// as its Outputs: a plan's setup step hands them on as {{ids}}.
	KeepIDs bool

	RangeSize   int64
	Sizes       units.Sizes
	Concurrency int
	Runtime     time.Duration
	Count       int64
	// MaxConcurrency, with Rate, is how many workers a run may grow to
	// when the schedule finds none free (0: Concurrency, no growth).
	MaxConcurrency int
	// Rate is requests per second across all workers of the whole load
	// (a segment paces its share); 0 is as fast as they go.
	Rate float64
	// RateProcess spaces the paced starts: evenly, or as a Poisson
	// process (fio's rate_process).
	RateProcess driver.Process
	// PacedLater: a curve's or a search's load, whose rate comes with
	// its calibration (workload.Pacer).
	PacedLater bool
	Data       datagen.Pattern
	HTTP2      bool // HTTP/2 over TLS
	H2C        bool // HTTP/2 without TLS
	Insecure   bool
	Verify     bool
	Timeout    time.Duration

	// Segment is the share of the load this process runs: its part of
	// the concurrency and the count; operation k of segment I of N is
	// index k*N+I of the whole, so {{i}} (and the entries of URL and id
	// files) are the segment's own, and N segments together make the
	// whole's indexes exactly.
	Segment segment.Segment
}

// DefaultUploadSize is the body an upload sends when no size is given.
const DefaultUploadSize = 1 << 20

// DefaultOptions are the flags' defaults.
func DefaultOptions() Options {
	return Options{Method: http.MethodPut, Sizes: units.Sizes{Fixed: []int64{DefaultUploadSize}}, Concurrency: 1, Timeout: 10 * time.Minute}
}

// Validate checks the options on their own.
func (o *Options) Validate() error {
	switch {
	case o.Mode != Upload && o.Mode != Download:
		return fmt.Errorf("mode %q: want upload or download", o.Mode)
	case o.URL == "" && o.URLFile == "":
		return fmt.Errorf("--url is required, e.g. http://127.0.0.1:8080/obj/{{i}}")
	case o.URL != "" && !strings.HasPrefix(o.URL, "http://") && !strings.HasPrefix(o.URL, "https://"):
		return fmt.Errorf("--url %q: want http:// or https://", o.URL)
	case o.Mode == Upload && o.Method != http.MethodPut && o.Method != http.MethodPost:
		return fmt.Errorf("--method %q: want PUT or POST", o.Method)
	case o.Concurrency < 1 || o.Concurrency > 10000:
		return fmt.Errorf("--concurrency %d: want 1..10000", o.Concurrency)
	case o.RateProcess != driver.Linear && o.Rate == 0 && !o.PacedLater:
		return fmt.Errorf("--rate-process %s spaces the starts --rate paces (or a curve's loads); give --rate", o.RateProcess)
	case o.MaxConcurrency > 0 && o.Rate == 0 && !o.PacedLater:
		return fmt.Errorf("--max-concurrency %d: workers are added to keep a schedule; give --rate too", o.MaxConcurrency)
	case o.MaxConcurrency > 0 && (o.MaxConcurrency < o.Concurrency || o.MaxConcurrency > 10000):
		return fmt.Errorf("--max-concurrency %d: want --concurrency (%d) to 10000", o.MaxConcurrency, o.Concurrency)
	case o.Runtime == 0 && o.Count == 0:
		return fmt.Errorf("--runtime or --count is required")
	case o.DownloadURL != "" && o.IDFromJSON == "":
		return fmt.Errorf("--download-url needs --id-from-json, the field of the upload's response that names the object")
	case o.DownloadURL != "" && !strings.Contains(o.DownloadURL, "{{id}}"):
		return fmt.Errorf("--download-url %q: want a {{id}} where the uploaded object's id goes", o.DownloadURL)
	case o.Basic != "" && !strings.Contains(o.Basic, ":"):
		return fmt.Errorf("--basic: want user:password")
	case o.IDFile != "" && o.Mode != Download:
		return fmt.Errorf("--id-file is for downloads; uploads name their objects with {{i}}")
	case o.IDFile != "" && !strings.Contains(o.URL, "{{id}}"):
		return fmt.Errorf("--url %q: want a {{id}} where each id of --id-file goes", o.URL)
	case o.Mode == Download && o.IDFile == "" && strings.Contains(o.URL, "{{id}}"):
		return fmt.Errorf("--url %q has {{id}}: give the ids with --id-file (in a plan, a setup step's {{ids}})", o.URL)
	case o.LoginToken != "" && o.LoginURL == "":
		return fmt.Errorf("--login-token needs --login-url")
	case starved(o.Segment, o.Concurrency):
		return o.Segment.Starve("--concurrency", o.Concurrency, "no worker", true)
	case o.Count > 0 && starved(o.Segment, int(o.Count)):
		return o.Segment.Starve("--count", int(o.Count), "nothing to do", false)
	case o.Segment.Split() && o.KeepIDs:
		return fmt.Errorf("a segment keeps no ids for a later step: it uploads only its share")
	}
	if err := flagval.CheckPeriod("--rate", o.Rate, o.Runtime, o.Count); err != nil {
		return err
	}
	return o.Data.Validate()
}

func starved(seg segment.Segment, total int) bool {
	_, ok := seg.Starved(total)
	return ok
}
