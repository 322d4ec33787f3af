package store

import (
	"errors"
	"path/filepath"
	"syscall"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/iolab/iolab/internal/badinput"
	"github.com/iolab/iolab/internal/units"
)

// roomless is the free space below which an I/O error of SQLite is taken
// for the want of space it most likely is: the log's shared-memory file
// (FILE-shm) cannot grow on a full disk, which SQLite reports as an I/O
// error, not as SQLITE_FULL.
const roomless = 1 << 20

// spaceErr is err as the bad input it is (exit 2, as docs/commands.md
// says) when SQLite could not write for want of space on the disk that
// holds the file — SQLITE_FULL, or an I/O error with less than roomless
// free — else nil.
func (s *Store) spaceErr(err error) error {
	var e *sqlite.Error
	if s.db == nil || s.db.pg || !errors.As(err, &e) {
		return nil
	}
	code := e.Code() & 0xff
	if code != sqlite3.SQLITE_FULL && code != sqlite3.SQLITE_IOERR {
		return nil
	}
	var fs syscall.Statfs_t
	if syscall.Statfs(filepath.Dir(s.path), &fs) != nil {
		return nil
	}
	free := int64(fs.Bavail) * fs.Bsize
	if code == sqlite3.SQLITE_IOERR && free >= roomless {
		return nil
	}
	left := "no space left"
	if free > 0 {
		left = "not enough space left (" + units.FormatSize(free) + ")"
	}
	return badinput.Errorf("--db %s: %s on its disk: free some, or point --db at another disk", s.path, left)
}
