package s3

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/iolab/iolab/internal/datagen"
	"github.com/iolab/iolab/internal/driver"
	"github.com/iolab/iolab/internal/flagval"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/segment"
	"github.com/iolab/iolab/internal/units"
)

// Options is one S3 workload.
type Options struct {
	// Endpoint is http(s)://host:port, or several, comma-separated: the
	// workers are spread over them round robin (as warp's --host).
	Endpoint     string
	Region       string
	Bucket       string
	AccessKey    string
	SecretKey    string
	SessionToken string
	Insecure     bool   // accept any TLS certificate
	CA           string // a PEM file of certificates to trust besides the system's
	Lookup       string // auto, path or dns (virtual-host style)
	HTTP2        bool
	CreateBucket bool

	Mix         Mix
	Sizes       units.Sizes
	RangeSize   int64 // GET a random range of this size instead of the whole object
	PartSize    int64 // multipart part size
	PageSize    int   // LIST page size
	DeleteBatch int   // objects per DELETE (1: DeleteObject; more: DeleteObjects)
	Concurrency int
	// MaxConcurrency, with Rate, is how many workers a run may grow to
	// when the schedule finds none free (0: Concurrency, no growth).
	MaxConcurrency int
	// Pool is how many idle connections the client keeps (0: Concurrency).
	// With fewer, GET and PUT go through net/http's pool, which closes a
	// connection that comes back when the pool is full — the small pool of
	// a client that pays a TLS handshake for many of its requests.
	Pool    int
	Runtime time.Duration
	Count   int64   // operations per run when not time-based
	Rate    float64 // ops/s across all workers; 0 = as fast as possible
	// RateProcess spaces the paced starts: evenly, or as a Poisson
	// process (fio's rate_process).
	RateProcess driver.Process
	// PacedLater: a curve's or a search's load, whose rate comes with
	// its calibration (workload.Pacer).
	PacedLater bool
	Objects    int // objects the prepare phase creates for get/head/list/copy/delete
	Prefix     string
	// KeyLayout is how keys are built from the prefix, the run's stamp and
	// the object's name: prefix ("/" between them, the default), flat
	// ("-"), sep:X, or a template (ParseKeyLayout).
	KeyLayout string
	Data      datagen.Pattern
	// DedupPct is the share of objects whose content repeats an earlier
	// object exactly (Data.DedupPct works within objects).
	DedupPct int
	Verify   bool
	// CheckReads compares every GET's bytes, as they arrive, with what
	// was written.
	CheckReads bool
	Keep       bool
	// Client is how GET, PUT, HEAD and DELETE are sent: ClientAuto,
	// ClientLoop, ClientConn or ClientSDK.
	Client string
	// Timeout bounds each request (each attempt) from its start to the
	// end of its answer; 0: none.
	Timeout time.Duration
	// Retries is how many times a request that failed in a way that may
	// pass (no answer, 500, 503 SlowDown) is sent again; each is counted.
	Retries int
	// Segment is the share of the load this process runs: its part of
	// Concurrency, Count and Rate, under a prefix of its own.
	Segment segment.Segment
}

// DefaultOptions are the defaults of the flags.
func DefaultOptions() Options {
	return Options{Region: "us-east-1", Lookup: "auto", Mix: Mix{{Op: metrics.Get, Weight: 1}},
		Sizes: units.Sizes{Fixed: []int64{4096}}, PartSize: 5 << 20, PageSize: 1000, DeleteBatch: 1,
		Concurrency: 16, Objects: 0, Prefix: "iolab", Timeout: DefaultTimeout, Retries: DefaultRetries, Client: ClientAuto}
}

// The ways GET, PUT, HEAD and DELETE reach the server (--client).
const (
	// ClientAuto is ClientLoop where the job allows it (loopable), else
	// ClientConn.
	ClientAuto = "auto"
	// ClientLoop drives every worker's connection from event loops, one
	// per CPU.
	ClientLoop = "loop"
	// ClientConn gives each worker a goroutine and its own signed
	// connection.
	ClientConn = "conn"
	// ClientSDK sends them through minio-go.
	ClientSDK = "sdk"
)

// DefaultTimeout and DefaultRetries are what a request gets without
// --timeout and --retries: a minute covers a 5 GiB part at 100 MB/s, and
// two retries ride out a dropped connection without hiding a server that
// fails.
const (
	DefaultTimeout = time.Minute
	DefaultRetries = 2
)

// Weighted is one operation of a mix.
type Weighted struct {
	Op     metrics.Op
	Weight int
}

// Mix is a weighted set of operations run in parallel.
type Mix []Weighted

var mixOps = []metrics.Op{metrics.Put, metrics.Get, metrics.Head, metrics.List, metrics.Delete, metrics.Multipart, metrics.Copy}

// ParseMix reads "put=20,get=60,head=10" or a single operation name.
func ParseMix(s string) (Mix, error) {
	var m Mix
	for _, part := range strings.Split(s, ",") {
		name, weight, hasWeight := strings.Cut(strings.TrimSpace(part), "=")
		op, ok := metrics.ParseOp(name)
		if !ok || op < metrics.Put {
			return nil, fmt.Errorf("%q: unknown operation %q; want put, get, head, list, delete, multipart or copy, each optionally =weight", s, name)
		}
		w := 1
		if hasWeight {
			var err error
			if w, err = strconv.Atoi(weight); err != nil || w < 0 {
				return nil, fmt.Errorf("%q: weight of %s must be a whole number >= 0", s, name)
			}
		}
		for _, x := range m {
			if x.Op == op {
				return nil, fmt.Errorf("%q: %s given twice", s, name)
			}
		}
		m = append(m, Weighted{Op: op, Weight: w})
	}
	if m.total() == 0 {
		return nil, fmt.Errorf("%q: all weights are 0", s)
	}
	return m, nil
}

func (m Mix) total() int {
	t := 0
	for _, w := range m {
		t += w.Weight
	}
	return t
}

func (m Mix) has(op metrics.Op) bool {
	for _, w := range m {
		if w.Op == op && w.Weight > 0 {
			return true
		}
	}
	return false
}

func (m Mix) pick(rng *rand.Rand) metrics.Op {
	n := rng.IntN(m.total())
	for _, w := range m {
		if n < w.Weight {
			return w.Op
		}
		n -= w.Weight
	}
	return m[len(m)-1].Op
}

func (m Mix) String() string {
	parts := make([]string, len(m))
	for i, w := range m {
		parts[i] = fmt.Sprintf("%s=%d", w.Op, w.Weight)
	}
	return strings.Join(parts, ",")
}

var regionName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`) })

// pool is the number of idle connections kept.
func (o *Options) pool() int {
	if o.Pool == 0 {
		return max(o.Concurrency, o.MaxConcurrency)
	}
	return o.Pool
}

// Validate checks the options on their own.
func (o *Options) Validate() error {
	switch {
	case o.Endpoint == "":
		return fmt.Errorf("--endpoint is required, e.g. http://127.0.0.1:9000")
	case o.Bucket == "":
		return fmt.Errorf("--bucket is required")
	case !regionName().MatchString(o.Region):
		return fmt.Errorf("--region %q: want a region name such as us-east-1 (letters, digits, - and _, starting with a letter or digit)", o.Region)
	case o.Concurrency < 1 || o.Concurrency > 10000:
		return fmt.Errorf("--concurrency %d: want 1..10000", o.Concurrency)
	case o.Pool < 0 || o.Pool > o.Concurrency:
		return fmt.Errorf("--pool %d: want 1..--concurrency (%d), or 0 for one connection per request in flight", o.Pool, o.Concurrency)
	case o.Client != ClientAuto && o.Client != ClientLoop && o.Client != ClientConn && o.Client != ClientSDK:
		return fmt.Errorf("--client %q: want auto, loop, conn or sdk", o.Client)
	case o.Lookup != "auto" && o.Lookup != "path" && o.Lookup != "dns":
		return fmt.Errorf("--lookup %q: want auto, path or dns", o.Lookup)
	case o.PartSize < 5<<20 && o.Mix.has(metrics.Multipart):
		return fmt.Errorf("--part-size %s: S3 parts are at least 5m", units.FormatSize(o.PartSize))
	case o.PageSize < 1 || o.PageSize > 1000:
		return fmt.Errorf("--page-size %d: want 1..1000", o.PageSize)
	case o.DeleteBatch < 1 || o.DeleteBatch > 1000:
		return fmt.Errorf("--delete-batch %d: want 1..1000", o.DeleteBatch)
	case o.Rate < 0:
		return fmt.Errorf("--rate: want ops/s >= 0")
	case o.RateProcess != driver.Linear && o.Rate == 0 && !o.PacedLater:
		return fmt.Errorf("--rate-process %s spaces the starts --rate paces (or a curve's loads); give --rate", o.RateProcess)
	case o.MaxConcurrency > 0 && o.Rate == 0 && !o.PacedLater:
		return fmt.Errorf("--max-concurrency %d: workers are added to keep a schedule; give --rate too", o.MaxConcurrency)
	case o.MaxConcurrency > 0 && (o.MaxConcurrency < o.Concurrency || o.MaxConcurrency > 10000):
		return fmt.Errorf("--max-concurrency %d: want --concurrency (%d) to 10000", o.MaxConcurrency, o.Concurrency)
	case o.DedupPct < 0 || o.DedupPct > 100:
		return fmt.Errorf("--dedup %d: want 0..100", o.DedupPct)
	case o.Runtime == 0 && o.Count == 0:
		return fmt.Errorf("--runtime or --count is required")
	case len(o.Sizes.Fixed) == 0 && o.Sizes.Max == 0:
		return fmt.Errorf("--size is required")
	}
	if err := flagval.CheckPeriod("--rate", o.Rate, o.Runtime, o.Count); err != nil {
		return err
	}
	if err := o.checkDeletes(); err != nil {
		return err
	}
	if o.Client == ClientLoop {
		if err := o.loopable(); err != nil {
			return fmt.Errorf("--client loop: %w; use --client auto or conn", err)
		}
	}
	for _, ep := range o.endpoints() {
		if !strings.HasPrefix(ep, "http://") && !strings.HasPrefix(ep, "https://") {
			return fmt.Errorf("--endpoint %q: want http://host:port or https://host:port (several: repeat --endpoint, or separate them with commas)", ep)
		}
	}
	if _, err := ParseKeyLayout(o.KeyLayout); err != nil {
		return fmt.Errorf("--key-layout %w", err)
	}
	if err := o.Data.Validate(); err != nil {
		return fmt.Errorf("--compressible: %w", err)
	}
	return nil
}

// checkDeletes refuses a mix that deletes more objects than it writes
// where it would run out of them: deletes take what the run wrote, then
// what prepare wrote for them (--objects, put back untimed before the
// next run), and never an object a read may pick. A --runtime run of such
// a mix empties both; a --count run needs --objects for every delete it
// may make.
func (o *Options) checkDeletes() error {
	del := 0
	writes := 0
	for _, w := range o.Mix {
		switch w.Op {
		case metrics.Delete:
			del = w.Weight * o.DeleteBatch
		case metrics.Put, metrics.Multipart, metrics.Copy:
			writes += w.Weight
		}
	}
	if del <= writes {
		return nil
	}
	objects := o.objects()
	switch need := o.Count * int64(o.DeleteBatch); {
	case o.Runtime > 0:
		return fmt.Errorf("--mix %s deletes %d objects for each %d it writes, and a --runtime run would run out of them: "+
			"write at least as many as it deletes, or give --count with --objects at least --count x --delete-batch", o.Mix, del, writes)
	case int64(objects) < need:
		return fmt.Errorf("--mix %s deletes more objects than it writes: --count %d may delete %d, and --objects %d prepares fewer; give --objects %d",
			o.Mix, o.Count, need, objects, need)
	}
	return nil
}

// objects is how many objects prepare writes for reads (and again for
// deletes): --objects, else 4 per worker and at least 64.
func (o *Options) objects() int {
	if o.Objects > 0 {
		return o.Objects
	}
	return max(4*o.Concurrency, 64)
}

// share is the segment's part of the load (Validate first).
func (o Options) share() (Options, error) {
	seg := o.Segment
	if !seg.Split() {
		return o, nil
	}
	whole := o
	o.Concurrency = seg.Share(whole.Concurrency)
	if whole.MaxConcurrency > 0 {
		o.MaxConcurrency = max(seg.Share(whole.MaxConcurrency), o.Concurrency)
	}
	if err := seg.Starve("--concurrency", whole.Concurrency, "no worker", true); err != nil {
		return o, err
	}
	if whole.Pool > 0 {
		o.Pool = max(seg.Share(whole.Pool), 1)
	}
	if whole.Count > 0 {
		o.Count = int64(seg.Share(int(whole.Count)))
		if err := seg.Starve("--count", int(whole.Count), "nothing to do", false); err != nil {
			return o, err
		}
	}
	o.Rate = seg.Rate(whole.Rate)
	o.Prefix = fmt.Sprintf("%s-s%d", whole.Prefix, seg.I)
	return o, nil
}

// endpoints are the endpoints the workers are spread over.
func (o *Options) endpoints() []string {
	var out []string
	for _, ep := range strings.Split(o.Endpoint, ",") {
		if ep = strings.TrimSpace(ep); ep != "" {
			out = append(out, ep)
		}
	}
	return out
}

// KeyLayout builds object keys from the prefix, the stamp of a run (or of
// the prepared objects) and an object's name.
type KeyLayout struct {
	sep      string
	template string
}

// ParseKeyLayout reads prefix (the default: prefix/stamp/name), flat
// (prefix-stamp-name: no "/" at all, for stores that flatten or refuse
// it), sep:X (X between the parts), or a template that holds {stamp} and
// ends with {name}, and may hold {prefix}: "bench_{stamp}_{name}".
func ParseKeyLayout(s string) (KeyLayout, error) {
	switch {
	case s == "" || s == "prefix":
		return KeyLayout{sep: "/"}, nil
	case s == "flat":
		return KeyLayout{sep: "-"}, nil
	case strings.HasPrefix(s, "sep:") && len(s) > 4:
		return KeyLayout{sep: s[4:]}, nil
	case strings.Contains(s, "{stamp}") && strings.HasSuffix(s, "{name}") && strings.Count(s, "{name}") == 1:
		return KeyLayout{template: s}, nil
	}
	return KeyLayout{}, fmt.Errorf("%q: want prefix (prefix/stamp/name), flat (prefix-stamp-name), sep:X, "+
		"or a template holding {stamp} and ending with {name}, e.g. {prefix}_{stamp}_{name}", s)
}

// Key is the key of the object name written under stamp.
func (l KeyLayout) Key(prefix string, stamp int64, name string) string {
	st := strconv.FormatInt(stamp, 10)
	if l.template != "" {
		return strings.NewReplacer("{prefix}", prefix, "{stamp}", st, "{name}", name).Replace(l.template)
	}
	return prefix + l.sep + st + l.sep + name
}
