package s3

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/iolab/iolab/internal/driver"
	"github.com/iolab/iolab/internal/flagval"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/units"
	"github.com/iolab/iolab/internal/workload"
)

func init() {
	metrics.DeclareFor("s3",
		metrics.Def{Name: "list_keys", Unit: "keys"},
		// The event loops that drove the workers' connections (--client
		// loop; 0: a goroutine per worker).
		metrics.Def{Name: "event_loops", Unit: "loops", Zeroable: true},
		metrics.Def{Name: "list_keys_per_s", Label: "LIST keys/s", Unit: "ops/s"},
		// Requests sent again (--retries), in all and per operation.
		metrics.Def{Name: "retries", Unit: "requests", Better: metrics.LowerIsBetter, Zeroable: true, PerOp: true},
		metrics.Def{Name: "endpoint.*.ops_per_s", Label: "endpoint * ops/s", Unit: "ops/s"},
		metrics.Def{Name: "endpoint.*.lat_p99_ns", Label: "endpoint * lat p99", Unit: "ns", Merge: metrics.MergeRecompute},
		metrics.Def{Name: "endpoint.*.errors", Label: "endpoint * errors", Unit: "operations"},
	)
	workload.Register(workload.Kind{
		Name:       "s3",
		Short:      "S3 objects: PUT, GET, HEAD, LIST, DELETE, multipart, COPY and mixes",
		NewOptions: func() workload.Options { return new(Flags) },
		Splits:     true,
		Primary:    "ops_per_s",
		Metrics:    []string{"ops_per_s", "put.lat_p99_ns", "get.lat_p99_ns", "get.ttfb_p99_ns", "put.response_p99_ns", "get.response_p99_ns"},
	})
}

// Flags are the s3 workload's options: the flags of `iolab s3` and the
// keys of a plan's s3: workload, declared once.
type Flags struct {
	Job   Options
	mix   string
	sizes string
	zeros bool
	sdk   bool
}

// AddFlags registers the workload's options: the flags of `iolab s3` and
// the keys of a plan's s3: workload.
func (o *Flags) AddFlags(f *pflag.FlagSet) {
	o.Job = DefaultOptions()
	j := &o.Job
	f.Var(flagval.URLList{P: &j.Endpoint}, "endpoint", "S3 endpoint, http(s)://host:port; several (repeated, or comma-separated) spread the workers over them, each shown apart")
	f.StringVar(&j.Region, "region", j.Region, "region")
	f.StringVar(&j.Bucket, "bucket", "", "bucket")
	flagval.SecretVar(f, &j.AccessKey, "access-key", "access key (default: AWS_ACCESS_KEY_ID or the shared credentials file); never stored or printed")
	flagval.SecretVar(f, &j.SecretKey, "secret-key", "secret key (default: AWS_SECRET_ACCESS_KEY); never stored or printed")
	f.BoolVar(&j.Insecure, "insecure", false, "accept any TLS certificate")
	f.StringVar(&j.CA, "ca", "", "PEM file of CA certificates to trust besides the system's (a private CA's or a self-signed server's)")
	f.StringVar(&j.KeyLayout, "key-layout", "prefix", "object keys: prefix (prefix/stamp/name), flat (prefix-stamp-name, no '/': for stores that flatten keys), sep:X, or a template with {prefix}, {stamp}, ending with {name}")
	f.StringVar(&j.Lookup, "lookup", j.Lookup, "bucket addressing: auto, path or dns (virtual-host style)")
	f.BoolVar(&j.HTTP2, "http2", false, "allow HTTP/2 over TLS")
	f.BoolVar(&j.CreateBucket, "create-bucket", false, "create the bucket if it does not exist")
	f.StringVar(&o.mix, "mix", "get", "operations and weights: put=20,get=60,head=10,list=5,delete=5 (also multipart, copy)")
	f.StringVar(&o.sizes, "size", "4k", "object size: 4k, a list 1k,4k,64k, or a log-uniform range 1k-10m")
	f.Var(flagval.Size{P: &j.RangeSize}, "range-size", "GET a random range of this many bytes")
	f.Var(flagval.Size{P: &j.PartSize, Min: 5 << 20, Max: 5 << 30}, "part-size", "multipart part size")
	flagval.IntVar(f, &j.PageSize, "page-size", j.PageSize, 1, 1000, "LIST page size")
	flagval.IntVar(f, &j.DeleteBatch, "delete-batch", j.DeleteBatch, 1, 1000, "objects per DELETE (more than 1: DeleteObjects)")
	flagval.IntVar(f, &j.Concurrency, "concurrency", j.Concurrency, 1, flagval.MaxConcurrency, "operations in flight")
	flagval.IntVar(f, &j.MaxConcurrency, "max-concurrency", 0, 0, flagval.MaxConcurrency, "with --rate: add workers, up to this many, when an operation is due and none is free (k6's maxVUs; 0: --concurrency, none added)")
	flagval.IntVar(f, &j.Pool, "pool", 0, 0, flagval.MaxConcurrency, "idle connections kept between requests (default: --concurrency); with fewer, connections that come back when the pool is full are closed, as a small pool does")
	f.Var(flagval.Duration{P: &j.Runtime}, "runtime", "duration of each run (60, 60s, 1m)")
	flagval.IntVar(f, &j.Count, "count", 0, 0, flagval.MaxCount, "operations per run when not time-based")
	flagval.FloatVar(f, &j.Rate, "rate", 0, 0, flagval.MaxRate, "operations per second across all workers (0: as fast as possible)")
	f.Var(&j.RateProcess, "rate-process", driver.ProcessUsage)
	flagval.IntVar(f, &j.Objects, "objects", 0, 0, 10_000_000, "objects to prepare for get/head/list/copy/delete (default 4 x concurrency, at least 64)")
	f.StringVar(&j.Prefix, "prefix", j.Prefix, "key prefix of everything the run writes")
	flagval.PercentVar(f, &j.Data.CompressPct, "compressible", 0, "percentage of each object that compresses (zeros)")
	f.BoolVar(&o.zeros, "zeros", false, "objects of zeros")
	flagval.PercentVar(f, &j.DedupPct, "dedup", 0, "percentage of objects whose content repeats an earlier object")
	f.BoolVar(&j.Verify, "verify", false, "read back every object the run wrote and check its content")
	f.BoolVar(&j.CheckReads, "check-reads", j.CheckReads, "compare every GET's bytes, as they arrive, with what was written (prepared objects, ranges too); a byte that differs fails the GET, naming key and offset")
	f.BoolVar(&j.Keep, "keep", false, "leave the objects the run created")
	f.Var(flagval.Duration{P: &j.Timeout}, "timeout", "bound on each request, from its start to the end of its answer (0: none); one that passes it is a timeout error of its operation")
	flagval.IntVar(f, &j.Retries, "retries", j.Retries, 0, 10, "times a request that failed in a way that may pass (no answer, a timeout, 500, 503 SlowDown) is sent again, after minio-go's backoff; every retry is counted per operation")
	f.StringVar(&j.Client, "client", j.Client, "how GET, PUT, HEAD and DELETE are sent: loop (event loops, one per CPU, as wrk's threads), conn (a goroutine and a signed connection per worker), sdk (minio-go), auto (loop where the job allows: plain HTTP, no --rate, a mix of those four; else conn)")
	f.BoolVar(&o.sdk, "sdk-client", false, "the same as --client sdk")
}

// Options resolves the parsed flags into the workload's options.
func (o *Flags) Options() (Options, error) {
	j := o.Job
	var err error
	if j.Mix, err = ParseMix(o.mix); err != nil {
		return j, fmt.Errorf("--mix %w", err)
	}
	if j.Sizes, err = units.ParseSizes(o.sizes); err != nil {
		return j, fmt.Errorf("--size %w", err)
	}
	j.Data.Zeros = o.zeros
	if o.sdk {
		if j.Client != ClientAuto && j.Client != ClientSDK {
			return j, fmt.Errorf("--sdk-client and --client %s: give one", j.Client)
		}
		j.Client = ClientSDK
	}
	return j, nil
}

// Build implements workload.Options.
func (o *Flags) Build(b workload.Build) (workload.Workload, string, error) {
	job, err := o.Options()
	if err != nil {
		return nil, "", err
	}
	job.Segment = b.Segment
	w, err := New(job)
	return w, b.Dir, err
}

// PacedLater implements workload.Pacer.
func (o *Flags) PacedLater() { o.Job.PacedLater = true }

// FlatOut implements workload.Pacer.
func (o *Flags) FlatOut() { o.Job.RateProcess, o.Job.MaxConcurrency = driver.Linear, 0 }

// PaceKey implements workload.Pacer.
func (o *Flags) PaceKey() string { return "rate" }

// AtLeast implements workload.Lengthener: a paced run of a runtime holds
// at least ops operations at its rate, up to workload.MaxLengthened times the runtime
// asked (the rate is the search's; a count is the user's, and stays).
func (o *Flags) AtLeast(ops int64) bool {
	if o.Job.Count > 0 {
		return false
	}
	var longer bool
	o.Job.Runtime, longer = workload.Lengthened(o.Job.Runtime, o.Job.Rate, ops)
	return longer
}

// Pace implements workload.Pacer: operations per second across all
// workers, share of what max did in all.
func (o *Flags) Pace(max *metrics.Result, share float64) {
	o.Job.Rate = share * max.PerSecond(max.Ops())
}
