package fs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/iolab/iolab/internal/datagen"
	"github.com/iolab/iolab/internal/units"
	"github.com/iolab/iolab/internal/workload"
)

// filePath is file k of job j: the shared --filename, or fio's naming
// "<name>.<job>.<file>" inside --directory, or --filename_format's
// ($jobname, $jobnum, $filenum, $clientuid, as fio's).
func (o *Options) filePath(j, k int) string {
	if o.Filename != "" {
		return o.Filename
	}
	if o.FilenameFormat != "" {
		return filepath.Join(o.Directory, strings.NewReplacer("$jobname", o.filePrefix(), "$jobnum", strconv.Itoa(j),
			"$filenum", strconv.Itoa(k), "$clientuid", strconv.Itoa(os.Getuid())).Replace(o.FilenameFormat))
	}
	return filepath.Join(o.Directory, fmt.Sprintf("%s.%d.%d", o.filePrefix(), j, k))
}

// filePrefix is what the job's files are named after in its directory:
// FilePrefix, else "iolab".
func (o *Options) filePrefix() string {
	if o.FilePrefix != "" {
		return strings.ReplaceAll(o.FilePrefix, "/", "_")
	}
	return "iolab"
}

// CheckDirectory gives the clear errors of a missing, non-directory or
// read-only --directory before any file is created.
func CheckDirectory(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("--directory %s: no such directory; create it or point --directory at an existing one", dir)
	case err != nil:
		return fmt.Errorf("--directory %s: %w", dir, err)
	case !st.IsDir():
		return fmt.Errorf("--directory %s: not a directory", dir)
	}
	if err := unix.Access(dir, unix.W_OK); err != nil {
		return fmt.Errorf("--directory %s: not writable (%v); point --directory at a writable directory", dir, err)
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err == nil && fs.Flags&unix.ST_RDONLY != 0 {
		return fmt.Errorf("--directory %s: read-only filesystem; point --directory at a writable directory", dir)
	}
	// Permission bits say nothing to root, and sysfs or procfs refuse new
	// files to anyone: a file made and removed says it.
	probe, err := os.CreateTemp(dir, ".iolab-probe-*")
	if err != nil {
		return fmt.Errorf("--directory %s: cannot create a file in it (%v); point --directory at a writable directory", dir, unwrapPath(err))
	}
	probe.Close()
	return os.Remove(probe.Name())
}

// unwrapPath is the reason of a path error, without the path the message
// already names.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// existingSize is the size of a regular file or block device, or -1 when the
// path does not exist.
func existingSize(path string) (int64, bool, error) {
	st, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return -1, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	if st.Mode()&os.ModeDevice != 0 {
		f, err := os.Open(path)
		if err != nil {
			return 0, true, err
		}
		defer f.Close()
		n, err := f.Seek(0, 2)
		return n, true, err
	}
	if !st.Mode().IsRegular() {
		return 0, false, fmt.Errorf("not a regular file or block device")
	}
	return st.Size(), false, nil
}

// layOut extends path to size bytes of random data, as fio's "Laying out IO
// file", so reads hit real blocks rather than holes.
func layOut(ctx context.Context, path string, size int64, data datagen.Pattern) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
	switch {
	case errors.Is(err, os.ErrPermission), errors.Is(err, unix.EROFS), errors.Is(err, unix.ENOENT):
		return &workload.InputError{Err: fmt.Errorf("lay out %s: %v; point --filename or --directory at a file iolab can write", path, unwrapPath(err))}
	case err != nil:
		return fmt.Errorf("lay out %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("lay out %s: %w", path, err)
	}
	var free unix.Statfs_t
	if unix.Fstatfs(int(f.Fd()), &free) == nil && free.Blocks > 0 { // ramfs reports no size at all
		avail := int64(free.Bavail) * free.Bsize
		if need := size - st.Size(); need > avail {
			return &workload.InputError{Err: fmt.Errorf("lay out %s: needs %s more but only %s free; lower --size or free space", path, units.HumanSize(need), units.HumanSize(avail))}
		}
	}
	gen := datagen.New(data, 0x1a7)
	buf := make([]byte, 1<<20)
	for off := st.Size(); off < size; off += int64(len(buf)) {
		if err := ctx.Err(); err != nil {
			return err
		}
		chunk := buf[:min(int64(len(buf)), size-off)]
		gen.Fill(chunk)
		if _, err := f.WriteAt(chunk, off); err != nil {
			return fmt.Errorf("lay out %s: %w", path, err)
		}
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("lay out %s: %w", path, err)
	}
	return nil
}

// OpenFile opens path with flags; with direct it asks for O_DIRECT and, on
// a filesystem that refuses it (tmpfs), falls back to buffered I/O and
// reports the fallback.
func OpenFile(path string, flags int, direct bool) (fd int, fellBack bool, err error) {
	flags |= unix.O_CLOEXEC
	if direct {
		fd, err = unix.Open(path, flags|unix.O_DIRECT, 0o644)
		if err == nil {
			return fd, false, nil
		}
		if !errors.Is(err, unix.EINVAL) {
			return -1, false, fmt.Errorf("open %s: %w", path, err)
		}
		fellBack = true
	}
	fd, err = unix.Open(path, flags, 0o644)
	if err != nil {
		return -1, false, fmt.Errorf("open %s: %w", path, err)
	}
	return fd, fellBack, nil
}

// AlignedBuffer returns n bytes aligned to the page size, as O_DIRECT needs.
// A buffer of a huge page or more asks for huge pages (where transparent
// huge pages are "madvise", as on Debian): an O_DIRECT call pins every page
// of its buffer, and pinning 4 KiB pages was 38% of iolab frames' CPU on a
// disk (8 MiB calls). With 2 MiB pages frames took 0.29x vframetest's CPU
// per frame there, where they took 1.27x (bench/frames_vs_vframetest).
func AlignedBuffer(n int) ([]byte, func(), error) {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, nil, fmt.Errorf("allocate %d-byte I/O buffer: %w", n, err)
	}
	if n >= hugePage {
		_ = unix.Madvise(b, unix.MADV_HUGEPAGE) // a kernel without THP keeps small pages
	}
	return b, func() { _ = unix.Munmap(b) }, nil
}

// hugePage is the size of a transparent huge page on x86-64 and arm64
// with 4 KiB pages.
const hugePage = 2 << 20
