package s3

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/iolab/iolab/internal/datagen"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/workload"
)

// Verification is the outcome of reading objects back: each checked object
// read as written, read and different (Mismatched), said by the server not
// to exist (Missing), or not read at all though it may exist (Unreadable:
// a timeout, an answer cut short or malformed, a refusal) — a slow server
// after a restart is not a loss.
type Verification struct {
	Checked, Mismatched, Missing, Unreadable int64
	// Bad lists the first few objects that were not as written, each
	// with why.
	Bad []string
}

// Failed is how many objects were not read back as written.
func (v Verification) Failed() int64 { return v.Mismatched + v.Missing + v.Unreadable }

func (v Verification) addTo(res *metrics.Result) {
	res.Extra["verify_checked"] = float64(v.Checked)
	res.Extra["verify_mismatched"] = float64(v.Mismatched)
	res.Extra["verify_missing"] = float64(v.Missing)
	res.Extra["verify_unreadable"] = float64(v.Unreadable)
	if len(v.Bad) > 0 {
		res.Errors += v.Failed()
		if res.FirstError == "" { // the load's own came first
			res.FirstError = "verify: " + v.Bad[0]
		}
		res.Notes = append(res.Notes, metrics.Note{Code: "verify-failed", Message: fmt.Sprintf(
			"%d of %d objects read back wrong, missing or unreadable; first: %s", v.Failed(), v.Checked, strings.Join(v.Bad, ", "))})
	}
}

// verifyObjects reads back objects and compares each, byte for byte, with
// the content its seed generates, with Concurrency readers.
func verifyObjects(ctx context.Context, c *client, o *Options, cont datagen.Content, objs []object) Verification {
	var checked, mismatched, missing, unreadable atomic.Int64
	var mu sync.Mutex
	var bad []string
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < o.Concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			check := cont.Checker()
			for i := next.Add(1) - 1; i < int64(len(objs)) && ctx.Err() == nil; i = next.Add(1) - 1 {
				obj := objs[i]
				check.Reset(obj.seed, obj.size, 0, obj.size)
				same, err := readCompare(ctx, c, o.Bucket, obj.key, check)
				if ctx.Err() != nil {
					return // cut by Ctrl-C: not checked
				}
				checked.Add(1)
				problem := ""
				switch {
				case err != nil && errorCode(err) == "NoSuchKey":
					missing.Add(1)
					problem = "missing"
				case err != nil:
					unreadable.Add(1)
					problem = "unreadable: " + errorCode(err)
				case !same:
					mismatched.Add(1)
					problem = "content differs"
				}
				if problem != "" {
					mu.Lock()
					if len(bad) < 5 {
						bad = append(bad, obj.key+" ("+problem+")")
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return Verification{Checked: checked.Load(), Mismatched: mismatched.Load(), Missing: missing.Load(), Unreadable: unreadable.Load(), Bad: bad}
}

// VerifyFlags are what a later check of kept objects is told beside what
// their runs stored: credentials (never stored), TLS, and how to read.
type VerifyFlags struct {
	AccessKey, SecretKey string
	Insecure             bool
	CA                   string
	// Region and Lookup, when given, replace the runs' own.
	Region, Lookup string
	Concurrency    int
	Timeout        time.Duration
	Retries        int
}

// KeptCell is the objects one cell's runs left in place (--keep), with the
// cell's parameters as stored and the seed of the content they hold.
type KeptCell struct {
	Params      map[string]string
	ContentSeed uint64
	Objects     []workload.Object
}

// Target is what a check of c reads: the endpoint and bucket its runs wrote.
func (c KeptCell) Target() string { return c.Params["endpoint"] + "/" + c.Params["bucket"] }

// VerifyKept checks a cell's kept objects against the content their seed
// generates, on the endpoint and bucket the runs wrote them to, as those
// runs' options said (region, addressing, compressibility), where f does
// not say otherwise. Cut by ctx, it returns what it checked.
func VerifyKept(ctx context.Context, f VerifyFlags, c KeptCell) (Verification, error) {
	o := DefaultOptions()
	o.Endpoint, o.Bucket = c.Params["endpoint"], c.Params["bucket"]
	o.AccessKey, o.SecretKey, o.Insecure, o.CA, o.Concurrency = f.AccessKey, f.SecretKey, f.Insecure, f.CA, f.Concurrency
	o.Timeout, o.Retries = f.Timeout, f.Retries
	o.Region = cmp.Or(f.Region, c.Params["region"], o.Region)
	o.Lookup = cmp.Or(f.Lookup, c.Params["lookup"], o.Lookup)
	o.Data.CompressPct, _ = strconv.Atoi(c.Params["compressible"])
	o.Data.Zeros = c.Params["zeros"] == "1"
	cl, err := newClient(&o, o.endpoints()[0])
	if err != nil {
		return Verification{}, err
	}
	if err := cl.preflight(ctx, &o); errors.As(err, new(*noBucketError)) {
		// The bucket itself is gone (a restart that lost it): a loss of
		// every object, found, not an error of the check.
		v := Verification{Checked: int64(len(c.Objects)), Missing: int64(len(c.Objects))}
		for _, x := range c.Objects[:min(5, len(c.Objects))] {
			v.Bad = append(v.Bad, x.Key+" (missing: no bucket "+o.Bucket+")")
		}
		return v, nil
	} else if err != nil {
		return Verification{}, err
	}
	list := make([]object, len(c.Objects))
	for i, x := range c.Objects {
		list[i] = object{key: x.Key, size: x.Size, seed: x.Seed}
	}
	return verifyObjects(ctx, cl, &o, datagen.ContentOf(o.Data, c.ContentSeed), list), nil
}

// readCompare reads an object into v and says whether it matched.
func readCompare(ctx context.Context, c *client, bucket, key string, v *datagen.Checker) (bool, error) {
	obj, err := c.GetObject(ctx, bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return false, err
	}
	defer obj.Close()
	if _, err := copyBuffer(v, obj); err != nil {
		return false, cutShort(err)
	}
	return v.Differs() < 0, nil
}
