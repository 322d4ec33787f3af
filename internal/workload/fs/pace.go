package fs

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/iolab/iolab/internal/driver"
	"github.com/iolab/iolab/internal/flagval"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/units"
)

// This file holds what a job does between operations: files served round
// robin (nrfiles, openfiles), rate caps (rate, rate_iops), pauses
// (thinktime) and sync_file_range, each with fio's name and meaning.

// fileSize is each file's size: FileSize, or the job's Size spread over
// its files.
func (o *Options) fileSize() int64 {
	if o.FileSize > 0 {
		return o.FileSize
	}
	return o.Size / int64(max(o.NrFiles, 1))
}

func (o *Options) validateFiles() error {
	switch {
	case o.NrFiles < 1 || o.NrFiles > 1<<20:
		return fmt.Errorf("--nrfiles %d: want 1..1048576", o.NrFiles)
	case o.NrFiles > 1 && o.Filename != "":
		return fmt.Errorf("--nrfiles %d with --filename: fio's nrfiles names files <job>.<n> in a --directory; use --directory", o.NrFiles)
	case o.OpenFiles < 0 || o.OpenFiles > o.NrFiles:
		return fmt.Errorf("--openfiles %d: want 1..nrfiles (%d)", o.OpenFiles, o.NrFiles)
	case o.FileSize < 0 || (o.FileSize > 0 && o.FileSize < o.BlockSize):
		return fmt.Errorf("--filesize %s: want at least one block (--bs %s)", units.FormatSize(o.FileSize), units.FormatSize(o.BlockSize))
	case o.NrFiles > 1 && o.FileSize == 0 && o.Size > 0 && o.Size/int64(o.NrFiles) < o.BlockSize:
		return fmt.Errorf("--size %s over --nrfiles %d leaves less than one block (--bs %s) per file", units.FormatSize(o.Size),
			o.NrFiles, units.FormatSize(o.BlockSize))
	case o.window() && o.Engine == EnginePsyncPool && o.IODepth > 1:
		return fmt.Errorf("--openfiles %d below --nrfiles with --ioengine psync-pool: files open and close as the job goes, which "+
			"needs one issuer per job; use --ioengine io_uring for iodepth %d", o.OpenFiles, o.IODepth)
	}
	return nil
}

// window says files open and close as the job goes (openfiles < nrfiles).
func (o *Options) window() bool { return o.OpenFiles > 0 && o.OpenFiles < o.NrFiles }

func (o *Options) validatePace() error {
	for d := range 2 {
		switch {
		case o.Rate[d] < 0 || o.RateIOPS[d] < 0:
			return fmt.Errorf("--rate/--rate_iops: want values >= 0")
		case o.Rate[d] > 0 && o.RateIOPS[d] > 0:
			return fmt.Errorf("--rate and --rate_iops both cap %ss: give one", metrics.Op(d))
		}
		if err := flagval.CheckPeriod(fmt.Sprintf("--rate/--rate_iops (%ss, in operations/s)", metrics.Op(d)), o.opsPerSecond(metrics.Op(d)), o.Runtime, 0); err != nil {
			return err
		}
	}
	if o.RateProcess != driver.Linear && o.Rate == [2]int64{} && o.RateIOPS == [2]int64{} && !o.PacedLater {
		return fmt.Errorf("--rate_process %s spaces the starts --rate or --rate_iops paces (or a curve's loads); give one", o.RateProcess)
	}
	switch {
	case o.ThinkTime < 0:
		return fmt.Errorf("--thinktime: want a duration >= 0")
	case o.ThinkTimeBlocks < 1:
		return fmt.Errorf("--thinktime_blocks %d: want at least 1", o.ThinkTimeBlocks)
	case o.SyncFileRange.Every < 0:
		return fmt.Errorf("--sync_file_range: want a count of writes >= 0")
	case (o.Fsync > 0 && o.Fdatasync > 0) || ((o.Fsync > 0 || o.Fdatasync > 0) && o.SyncFileRange.Every > 0):
		return fmt.Errorf("--fsync, --fdatasync and --sync_file_range: give one")
	}
	return nil
}

// opsPerSecond is the job's cap on operations of direction d (0: none).
func (o *Options) opsPerSecond(d metrics.Op) float64 {
	if o.RateIOPS[d] > 0 {
		return float64(o.RateIOPS[d])
	}
	return float64(o.Rate[d]) / float64(o.BlockSize)
}

// ParsePair reads fio's "read,write" form of rate and rate_iops: one value
// caps both directions, "R," only reads and ",W" only writes. parse reads
// one value.
func ParsePair(s string, parse func(string) (int64, error)) ([2]int64, error) {
	var out [2]int64
	r, w, pair := strings.Cut(s, ",")
	if strings.Contains(w, ",") {
		return out, fmt.Errorf("%q: want VALUE, or READ,WRITE (either may be empty); fio's third value (trim) is not taken", s)
	}
	for i, v := range []string{r, w} {
		if v = strings.TrimSpace(v); v == "" {
			continue
		}
		n, err := parse(v)
		if err != nil {
			return out, err
		}
		out[i] = n
	}
	if !pair {
		out[metrics.Write] = out[metrics.Read]
	}
	if r == "" && w == "" {
		return out, fmt.Errorf("%q: want a value, or READ,WRITE", s)
	}
	return out, nil
}

// formatPair is ParsePair's inverse.
func formatPair(p [2]int64, format func(int64) string) string {
	side := func(n int64) string {
		if n == 0 {
			return ""
		}
		return format(n)
	}
	if p[0] == p[1] {
		return format(p[0])
	}
	return side(p[0]) + "," + side(p[1])
}

// SyncRange is fio's sync_file_range=flags:N: sync_file_range(2) on the
// file after every N writes.
type SyncRange struct {
	Flags int
	Every int
}

var syncRangeFlags = []struct {
	name string
	flag int
}{{"wait_before", unix.SYNC_FILE_RANGE_WAIT_BEFORE}, {"write", unix.SYNC_FILE_RANGE_WRITE}, {"wait_after", unix.SYNC_FILE_RANGE_WAIT_AFTER}}

// ParseSyncRange reads fio's form: wait_before,write,wait_after:N.
func ParseSyncRange(s string) (SyncRange, error) {
	names, count, ok := strings.Cut(s, ":")
	var r SyncRange
	n, err := strconv.Atoi(count)
	if !ok || err != nil || n < 1 {
		return r, fmt.Errorf("%q: want FLAGS:N, N a count of writes >= 1 (e.g. wait_before,write:8)", s)
	}
	r.Every = n
	for _, name := range strings.Split(names, ",") {
		i := -1
		for k, f := range syncRangeFlags {
			if f.name == strings.TrimSpace(name) {
				i = k
			}
		}
		if i < 0 {
			return r, fmt.Errorf("%q: flag %q: want wait_before, write and/or wait_after", s, name)
		}
		r.Flags |= syncRangeFlags[i].flag
	}
	return r, nil
}

func (r SyncRange) String() string {
	var names []string
	for _, f := range syncRangeFlags {
		if r.Flags&f.flag != 0 {
			names = append(names, f.name)
		}
	}
	return strings.Join(names, ",") + ":" + strconv.Itoa(r.Every)
}
