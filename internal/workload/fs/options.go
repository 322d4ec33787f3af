package fs

import (
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/iolab/iolab/internal/datagen"
	"github.com/iolab/iolab/internal/driver"
	"github.com/iolab/iolab/internal/segment"
	"github.com/iolab/iolab/internal/units"
)

// Pattern is fio's rw: the access pattern of a job.
type Pattern string

// The patterns fio users know.
const (
	Read      Pattern = "read"
	Write     Pattern = "write"
	RandRead  Pattern = "randread"
	RandWrite Pattern = "randwrite"
	RW        Pattern = "rw"
	RandRW    Pattern = "randrw"
	// Trim and RandTrim discard blocks (fio's trim, randtrim): BLKDISCARD
	// on a block device; on a file, a hole punched (fio refuses a file).
	Trim     Pattern = "trim"
	RandTrim Pattern = "randtrim"
)

var patterns = []Pattern{Read, Write, RandRead, RandWrite, RW, RandRW, Trim, RandTrim}

// ParsePattern accepts fio's rw names, plus readwrite as fio does.
func ParsePattern(s string) (Pattern, error) {
	if s == "readwrite" {
		return RW, nil
	}
	for _, p := range patterns {
		if string(p) == s {
			return p, nil
		}
	}
	return "", fmt.Errorf("%q: want one of read, write, randread, randwrite, rw, randrw, trim, randtrim", s)
}

func (p Pattern) random() bool {
	return p == RandRead || p == RandWrite || p == RandRW || p == RandTrim
}

// trims says every operation discards its block.
func (p Pattern) trims() bool { return p == Trim || p == RandTrim }

// readShare is the percentage of operations that read.
func (o *Options) readShare() int {
	switch o.RW {
	case Read, RandRead:
		return 100
	case Write, RandWrite, Trim, RandTrim:
		return 0
	}
	return o.RWMixRead
}

// Engines: how a job issues its I/O.
const (
	EngineAuto  = "auto"  // io_uring when iodepth > 1, else psync
	EnginePsync = "psync" // pread/pwrite, one at a time per job, as fio's psync: iodepth is capped at 1
	// EnginePsyncPool is iolab's own: iodepth threads per job, each
	// issuing pread/pwrite, so iodepth operations are in flight without
	// io_uring.
	EnginePsyncPool = "psync-pool"
	EngineIOUring   = "io_uring" // one ring per job with iodepth entries in flight
	EngineFio       = "fio"      // run fio itself on the same job
	// EngineNull is fio's null: every operation completes at once with no
	// data moved and no file, so it measures the harness's own ceiling.
	EngineNull = "null"
)

// Engines lists the accepted --ioengine values.
var Engines = []string{EngineAuto, EnginePsync, EnginePsyncPool, EngineIOUring, EngineFio, EngineNull}

// FioEngines are fio's engine names that iolab runs, by the engine that
// runs in their place: a fio command line or job file runs unchanged.
var FioEngines = map[string]string{"io_uring": EngineIOUring, "libaio": EngineIOUring, "psync": EnginePsync, "sync": EnginePsync,
	"pvsync": EnginePsync, "pvsync2": EnginePsync, "null": EngineNull}

// synchronous says the engine issues one operation at a time per thread.
func synchronous(engine string) bool { return engine == EnginePsync || engine == EnginePsyncPool }

// Options is one fs job in fio's vocabulary. Sizes are bytes.
type Options struct {
	// FioEngine is the ioengine fio runs with --ioengine fio: the job's own
	// (fio:libaio; a job file's ioengine=libaio), else io_uring for
	// queued I/O and psync for one operation at a time.
	FioEngine string
	Filename  string // a file or block device shared by all jobs
	Directory string // or a directory holding one file per job
	RW        Pattern
	// SeqAdd is fio's offset modifier of sequential I/O (rw=write:112k):
	// each operation starts that many bytes past the end of the one
	// before (negative: before it, read:-8k reads backwards), wrapping
	// within the region as fio does. RandSeq is its count for random I/O
	// (rw=randread:8): that many operations go on sequentially from each
	// random offset.
	SeqAdd    int64
	RandSeq   int
	RWMixRead int
	BlockSize int64
	// BlockSizes, when set, are the sizes reads and writes draw from
	// (index metrics.Read, Write), as fio's bssplit and bsrange; BlockSize
	// is then the unit offsets are aligned to: BlockAlign (fio's
	// blockalign), else the smallest size.
	BlockSizes [2]SizeMix
	BlockAlign int64
	Size       int64 // file size (region) per job
	// Offset is where the jobs' region starts in each file, and
	// OffsetIncrement how much further each next job's starts (fio's
	// offset and offset_increment: job J's at Offset + J x
	// OffsetIncrement, J counted over the whole load).
	Offset, OffsetIncrement int64
	IOSize                  int64 // bytes per job when not time-based; 0 = Size
	NumberIOs               int64 // operations a job does at most (fio's number_ios); 0 = no bound
	Runtime                 time.Duration
	// Steady, when set, ends a run before its Runtime once it is steady
	// (fio's steadystate, steadystate_duration, steadystate_ramp_time).
	Steady driver.SteadyState
	// RampTime is how long each run goes before it is measured (fio's
	// ramp_time).
	RampTime time.Duration
	// StartDelay is how long after the run's start the job starts (fio's
	// startdelay): beside other jobs, later than they.
	StartDelay time.Duration
	IODepth    int
	// IODepthBatch is how many queued operations io_uring submits at once
	// (fio's iodepth_batch_submit).
	IODepthBatch int
	NumJobs      int
	Direct       bool
	// Fsync issues an fsync after every Fsync writes (0: never).
	Fsync int
	// Fdatasync, like Fsync, with fdatasync.
	Fdatasync int
	// SyncFileRange calls sync_file_range(2) after every N writes with
	// the given flags (fio's sync_file_range=flags:N).
	SyncFileRange SyncRange
	Invalidate    bool // drop the files' page cache before each run, as fio does by default
	// NrFiles is how many files each job spreads its I/O over, round robin
	// (fio's nrfiles); FileSize is each one's size (default Size/NrFiles;
	// Size then defaults to NrFiles x FileSize), OpenFiles how many are
	// open at a time (default all): a file is closed when its share of a
	// pass is done and the next one opened.
	NrFiles   int
	FileSize  int64
	OpenFiles int
	// Rate caps each job's bandwidth in bytes/s and RateIOPS its
	// operations/s, reads and writes apart (index metrics.Read, Write; 0:
	// no cap), as fio's rate and rate_iops.
	Rate     [2]int64
	RateIOPS [2]int64
	// RateProcess spaces the paced starts: evenly, or as a Poisson
	// process (fio's rate_process).
	RateProcess driver.Process
	// PacedLater: a curve's or a search's load, whose rate comes with
	// its calibration (workload.Pacer).
	PacedLater bool
	// ThinkTime is a pause after every ThinkTimeBlocks operations, once
	// those have completed (fio's thinktime, thinktime_blocks).
	ThinkTime       time.Duration
	ThinkTimeBlocks int
	// Verify writes checked blocks and reads them back (fio's verify).
	Verify Verify
	Engine string
	Data   datagen.Pattern
	// FioPath is the fio binary for the fio engine (default "fio").
	FioPath string
	// Segment is the share of the jobs this process runs (segment I of N
	// of a load several hosts run); its jobs keep their numbers in the
	// whole, so their files are named apart.
	Segment segment.Segment
	// Thread runs the jobs as threads of this process, as fio's thread
	// option; by default each job runs as a process in a session of its
	// own, as fio's jobs do (jobs.go).
	Thread bool
	// NoRandomMap draws each random offset afresh (fio's norandommap);
	// by default every block is done once a pass, as fio does.
	NoRandomMap bool
	// RuntimeCaps makes Runtime a bound on a job that does its size, not
	// the length of a time-based one: a job file's runtime without
	// time_based, as fio reads it.
	RuntimeCaps bool
	// Loops is how many times a job that is not time-based does its size
	// (or io_size), as fio's loops; 0 or 1: once.
	Loops int
	// RandSeed seeds the random offsets and directions (fio's randseed;
	// 0: iolab's own), the same every run unless NoRandRepeat (fio's
	// randrepeat=0: another each run).
	RandSeed     uint64
	NoRandRepeat bool
	// FilenameFormat names the job's files in its directory as fio's
	// filename_format does ($jobname.$jobnum.$filenum is iolab's own).
	FilenameFormat string
	// FilePrefix names the job's files in its directory, PREFIX.JOB.FILE
	// as fio names them by the job's name ("": iolab): jobs that run at
	// the same time each have files of their own, as in fio.
	FilePrefix string
	// Distribution is where random offsets fall (fio's
	// random_distribution); uniform by default.
	Distribution Distribution
	jobOffset    int
}

// DefaultOptions are fio's defaults where fio has one.
func DefaultOptions() Options {
	return Options{
		RW: Read, RWMixRead: 50, BlockSize: 4096, IODepth: 1, IODepthBatch: 1, NumJobs: 1,
		Invalidate: true, Engine: DefaultEngine, NrFiles: 1, ThinkTimeBlocks: 1, Verify: Verify{Do: true},
	}
}

// DefaultEngine was chosen by measurement (README, "Choosing the default
// engine"): at iodepth 1 psync is as fast on direct I/O and a third faster
// on cached reads; at iodepth 32 io_uring gives 1.85x the IOPS of 32
// synchronous issuers per job for a third of the CPU.
const DefaultEngine = EngineAuto

// resolveEngine turns auto into the engine the job runs with.
func (o *Options) resolveEngine() {
	if o.Engine != EngineAuto {
		return
	}
	o.Engine = EnginePsync
	switch {
	case o.IODepth > 1 && o.RW.trims():
		o.Engine = EnginePsyncPool // a trim is a system call of its own, as in fio's engines
	case o.IODepth > 1:
		o.Engine = EngineIOUring
	}
}

// Validate checks the options on their own, before any file is touched.
// Errors name the fio option and what is accepted.
func (o *Options) Validate() error {
	switch {
	case o.Engine == EngineNull && o.Size <= 0:
		return fmt.Errorf("--ioengine null: --size is required (the region the null operations pretend to cover)")
	case o.Filename == "" && o.Directory == "" && o.Engine != EngineNull:
		return fmt.Errorf("--filename or --directory is required")
	case o.Filename != "" && o.FilenameFormat != "":
		return fmt.Errorf("--filename with --filename_format: give one (fio's filename wins over the format)")
	case o.Filename != "" && o.Directory != "":
		return fmt.Errorf("--filename and --directory: give one, not both")
	case o.BlockSize <= 0:
		return fmt.Errorf("--bs %d: want a positive size such as 4k", o.BlockSize)
	case o.Direct && o.BlockSize%512 != 0:
		return fmt.Errorf("--bs %s with --direct: want a multiple of 512", units.FormatSize(o.BlockSize))
	case o.Size < 0 || (o.Size > 0 && o.Size < o.BlockSize):
		return fmt.Errorf("--size %s: want at least one block (--bs %s)", units.FormatSize(o.Size), units.FormatSize(o.BlockSize))
	case o.RampTime < 0:
		return fmt.Errorf("--ramp_time: want a duration >= 0")
	case o.Steady.Enabled() && o.Runtime <= 0:
		return fmt.Errorf("--steadystate %s ends a time-based run early: give --runtime, the longest a run may go", o.Steady)
	case o.Steady.Enabled() && o.Steady.Window < 2*time.Second:
		return fmt.Errorf("--steadystate %s: give --steadystate_duration, the window judged, of 2s or more", o.Steady)
	case o.Steady.Enabled() && o.Steady.Window+o.Steady.Ramp > o.Runtime:
		return fmt.Errorf("--steadystate_duration %v after --steadystate_ramp_time %v: longer than --runtime %v, so no run could be steady", o.Steady.Window, o.Steady.Ramp, o.Runtime)
	case o.Steady.Enabled() && o.Engine == EngineFio:
		return fmt.Errorf("--steadystate with --ioengine fio: not yet; iolab's own engines judge it")
	case !o.Steady.Enabled() && (o.Steady.Window > 0 || o.Steady.Ramp > 0):
		return fmt.Errorf("--steadystate_duration, --steadystate_ramp_time: give --steadystate too (iops:2%%, bw_slope:0.1%%)")
	case o.IOSize < 0:
		return fmt.Errorf("--io_size: want a positive size")
	case o.IODepth < 1 || o.IODepth > 4096:
		return fmt.Errorf("--iodepth %d: want 1..4096", o.IODepth)
	case o.IODepthBatch < 1 || o.IODepthBatch > o.IODepth:
		return fmt.Errorf("--iodepth_batch_submit %d: want 1..iodepth (%d)", o.IODepthBatch, o.IODepth)
	case o.NumJobs < 1 || o.NumJobs > 1024:
		return fmt.Errorf("--numjobs %d: want 1..1024", o.NumJobs)
	case o.RWMixRead < 0 || o.RWMixRead > 100:
		return fmt.Errorf("--rwmixread %d: want 0..100", o.RWMixRead)
	case o.Fsync < 0 || o.Fdatasync < 0:
		return fmt.Errorf("--fsync/--fdatasync: want a count of writes >= 0")
	}
	if err := o.validateFiles(); err != nil {
		return err
	}
	if err := o.validatePace(); err != nil {
		return err
	}
	if err := o.validateVerify(); err != nil {
		return err
	}
	if _, err := ParsePattern(string(o.RW)); err != nil {
		return fmt.Errorf("--rw %w", err)
	}
	if err := o.validateRW(); err != nil {
		return err
	}
	if err := o.validateBlockSizes(); err != nil {
		return err
	}
	if err := o.validateTrims(); err != nil {
		return err
	}
	_, fio := FioEngines[o.Engine]
	if by, ok := strings.CutPrefix(o.Engine, EngineFio+":"); ok {
		_, fio = FioEngines[by]
	}
	if !validEngine(o.Engine) && !fio {
		return fmt.Errorf("--ioengine %q: want one of %s, fio's %s, or fio:ENGINE (fio run with its ENGINE, e.g. fio:libaio)", o.Engine,
			strings.Join(Engines, ", "), strings.Join(slices.Sorted(maps.Keys(FioEngines)), ", "))
	}
	if len(o.Data.Repeat) > 0 && o.Verify.on() {
		return fmt.Errorf("--buffer_pattern with --verify: iolab's verified blocks hold their own checked content; give one")
	}
	if err := o.Data.Validate(); err != nil {
		return fmt.Errorf("--buffer_compress_percentage/--dedupe_percentage/--buffer_pattern/--zero_buffers: %w", err)
	}
	return nil
}

// engineName is the engine as a flag gives it: fio:libaio for fio run
// with its own.
func (o *Options) engineName() string {
	if o.Engine == EngineFio && o.FioEngine != "" {
		return EngineFio + ":" + o.FioEngine
	}
	return o.Engine
}

func validEngine(e string) bool {
	for _, k := range Engines {
		if e == k {
			return true
		}
	}
	return false
}

// SizeOfTheFile is a cell's size when none was given and the target was
// not there to read it from when the cell was made.
const SizeOfTheFile = "the file's"

// Params renders the options as the cell's parameters.
func (o *Options) Params() map[string]string {
	p := map[string]string{
		"rw": string(o.RW), "bs": units.FormatSize(o.BlockSize), "size": units.FormatSize(o.Size),
		"iodepth": fmt.Sprint(o.IODepth), "numjobs": fmt.Sprint(o.NumJobs),
		"direct": fmt.Sprint(boolInt(o.Direct)), "ioengine": o.engineName(),
	}
	if o.Size == 0 {
		// Not known until the target is there (an export a variant's
		// server mounts): the file's own, as fio takes it; not 0.
		p["size"] = SizeOfTheFile
	}
	if o.RW == RW || o.RW == RandRW {
		p["rwmixread"] = fmt.Sprint(o.RWMixRead)
	}
	p["rw"] = o.rwName()
	o.blockSizesParams(p)
	if o.Offset > 0 {
		p["offset"] = units.FormatSize(o.Offset)
	}
	if o.OffsetIncrement > 0 {
		p["offset_increment"] = units.FormatSize(o.OffsetIncrement)
	}
	if o.Runtime > 0 {
		p["runtime"] = o.Runtime.String()
	}
	if o.Thread {
		p["thread"] = "1"
	}
	if o.Loops > 1 {
		p["loops"] = fmt.Sprint(o.Loops)
	}
	if o.RuntimeCaps && o.Runtime > 0 {
		p["time_based"] = "0"
	}
	if o.RandSeed != 0 {
		p["randseed"] = fmt.Sprint(o.RandSeed)
	}
	if o.NoRandRepeat {
		p["randrepeat"] = "0"
	}
	if o.NoRandomMap && o.RW.random() {
		p["norandommap"] = "1"
	}
	if !o.Distribution.Uniform() && o.RW.random() {
		p["random_distribution"] = o.Distribution.String()
	}
	if o.RampTime > 0 {
		p["ramp_time"] = o.RampTime.String()
	}
	if o.StartDelay > 0 {
		p["startdelay"] = o.StartDelay.String()
	}
	if o.Steady.Enabled() {
		p["steadystate"], p["steadystate_duration"] = o.Steady.String(), o.Steady.Window.String()
		if o.Steady.Ramp > 0 {
			p["steadystate_ramp_time"] = o.Steady.Ramp.String()
		}
	}
	if o.IODepthBatch > 1 {
		p["iodepth_batch_submit"] = fmt.Sprint(o.IODepthBatch)
	}
	if o.NumberIOs > 0 {
		p["number_ios"] = fmt.Sprint(o.NumberIOs)
	}
	if o.IOSize > 0 {
		p["io_size"] = units.FormatSize(o.IOSize)
	}
	if o.Fsync > 0 {
		p["fsync"] = fmt.Sprint(o.Fsync)
	}
	if o.Fdatasync > 0 {
		p["fdatasync"] = fmt.Sprint(o.Fdatasync)
	}
	if o.Data.CompressPct > 0 {
		p["buffer_compress_percentage"] = fmt.Sprint(o.Data.CompressPct)
	}
	if o.Data.DedupPct > 0 {
		p["dedupe_percentage"] = fmt.Sprint(o.Data.DedupPct)
	}
	if len(o.Data.Repeat) > 0 {
		p["buffer_pattern"] = "0x" + hex.EncodeToString(o.Data.Repeat)
	}
	if o.NrFiles > 1 {
		p["nrfiles"] = fmt.Sprint(o.NrFiles)
		p["filesize"] = units.FormatSize(o.fileSize())
		if o.OpenFiles > 0 && o.OpenFiles < o.NrFiles {
			p["openfiles"] = fmt.Sprint(o.OpenFiles)
		}
	}
	if o.SyncFileRange.Every > 0 {
		p["sync_file_range"] = o.SyncFileRange.String()
	}
	if o.Rate != [2]int64{} {
		p["rate"] = formatPair(o.Rate, units.FormatSize)
	}
	if o.RateIOPS != [2]int64{} {
		p["rate_iops"] = formatPair(o.RateIOPS, func(n int64) string { return fmt.Sprint(n) })
	}
	if o.RateProcess != driver.Linear {
		p["rate_process"] = o.RateProcess.String()
	}
	if o.ThinkTime > 0 {
		p["thinktime"] = o.ThinkTime.String()
		if o.ThinkTimeBlocks > 1 {
			p["thinktime_blocks"] = fmt.Sprint(o.ThinkTimeBlocks)
		}
	}
	o.Verify.params(p)
	switch {
	case o.Filename != "":
		p["filename"] = o.Filename
	case o.Directory != "":
		p["directory"] = o.Directory
	}
	if o.FilenameFormat != "" {
		p["filename_format"] = o.FilenameFormat
	}
	return p
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
