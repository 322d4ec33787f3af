package fs

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Trims, as fio's rw=trim and randtrim: each operation discards a block.
// On a block device that is BLKDISCARD, as fio issues it; on a file a
// hole punched in it (fallocate's PUNCH_HOLE, the file's size kept),
// which fio 3.33 refuses ("Inappropriate ioctl for device").

// validateTrims refuses what trims do not go with.
func (o *Options) validateTrims() error {
	if !o.RW.trims() {
		return nil
	}
	switch {
	case o.Engine == EngineIOUring:
		return fmt.Errorf("--rw %s with --ioengine io_uring: iolab trims with a system call each (psync, psync-pool for --iodepth), as fio's engines do", o.RW)
	case o.Verify.on():
		return fmt.Errorf("--rw %s with --verify: a trimmed block has nothing to check", o.RW)
	case o.Rate != [2]int64{} || o.RateIOPS != [2]int64{}:
		return fmt.Errorf("--rw %s with --rate/--rate_iops: iolab paces reads and writes", o.RW)
	}
	return nil
}

// blkDiscard is BLKDISCARD, _IO(0x12, 119).
const blkDiscard = 0x1277

// trim discards n bytes at off (the caller names the file and place of
// an error, as for a read or write).
func (file *jobFile) trim(off, n int64) error {
	if file.device {
		r := [2]uint64{uint64(off), uint64(n)}
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(file.fd), blkDiscard, uintptr(unsafe.Pointer(&r))); e != 0 {
			return e
		}
		return nil
	}
	return unix.Fallocate(file.fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n)
}
