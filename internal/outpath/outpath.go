// Package outpath guards the files iolab writes its outputs to — a
// latency log, a report, a profile. iolab often runs as root, so an output
// path never overwrites a file iolab did not write: a fuzzed `--lat-log
// /etc/passwd` once truncated the password file.
package outpath

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/iolab/iolab/internal/badinput"
)

// sinks are the devices an output may go to: they keep nothing (and
// /dev/full refuses it, as a full disk would).
var sinks = []string{os.DevNull, "/dev/full"}

// headBytes is how much of an existing file Check reads to know it.
const headBytes = 4096

// Check says whether the output path given to flag may be written: it
// does not exist yet, or it is empty, /dev/null or /dev/full, a pipe, or a regular
// file that begins as iolab writes this output (ours, given its first
// bytes, says so). Anything else — another file, a device, a directory —
// is refused with an error naming the flag, before anything runs.
func Check(flag, path string, ours func(head []byte) bool) error {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return badinput.Errorf("%s %s: %v", flag, path, err)
	case st.Mode()&fs.ModeNamedPipe != 0:
		return nil
	case st.IsDir():
		return badinput.Errorf("%s %s: a directory; give a file's path", flag, path)
	case !st.Mode().IsRegular():
		for _, sink := range sinks {
			if dev, err := os.Stat(sink); err == nil && os.SameFile(st, dev) {
				return nil
			}
		}
		return badinput.Errorf("%s %s: not a regular file (%s); iolab writes its outputs to files of its own", flag, path, st.Mode().Type())
	case st.Size() == 0:
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return badinput.Errorf("%s %s: %v", flag, path, err)
	}
	defer f.Close()
	head := make([]byte, headBytes)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return badinput.Errorf("%s %s: %v", flag, path, err)
	}
	if !ours(head[:n]) {
		return badinput.Errorf("%s %s: a file iolab did not write is there, and iolab never overwrites one; give a new path, or remove the file first if it is yours to lose", flag, path)
	}
	return nil
}

// Writable is Check, and that the directory path is to be written in is
// there: what Write needs, asked before anything runs.
func Writable(flag, path string, ours func(head []byte) bool) error {
	if err := Check(flag, path, ours); err != nil {
		return err
	}
	if dir := filepath.Dir(path); !isDir(dir) {
		return badinput.Errorf("%s %s: no directory %s to write it in", flag, path, dir)
	}
	return nil
}

func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

// Write writes a whole output (a report page) to path for flag, as Check
// allows: through a temporary file beside it, renamed over it, so a
// failure never leaves half a file where a good one was. A directory that
// is not there is bad input (exit 2); every error names path and the
// flag, never the temporary file.
func Write(flag, path string, data []byte, ours func(head []byte) bool) error {
	if err := Writable(flag, path, ours); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".iolab-*")
	if err != nil {
		return fmt.Errorf("%s %s: %w", flag, path, bare(err))
	}
	defer os.Remove(f.Name())
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", flag, path, bare(err))
	}
	return nil
}

// bare is a file operation's error without the (temporary) path it names.
func bare(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
