package fs

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"
)

// An I/O buffer of a huge page or more is advised to the kernel as one for
// huge pages (an O_DIRECT call then pins 2 MiB pages, not 4 KiB ones); a
// smaller one is left alone.
func TestAlignedBufferAsksForHugePages(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil {
		t.Skipf("a kernel without transparent huge pages: %v", err)
	}
	for _, c := range []struct {
		n    int
		want bool
	}{{8 << 20, true}, {hugePage, true}, {64 << 10, false}} {
		buf, free, err := AlignedBuffer(c.n)
		if err != nil {
			t.Fatal(err)
		}
		flags, err := vmFlags(uintptr(unsafe.Pointer(&buf[0])))
		free()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(" "+flags+" ", " hg "); got != c.want {
			t.Errorf("AlignedBuffer(%d): VmFlags %q, huge pages advised %v, want %v", c.n, flags, got, c.want)
		}
	}
}

// vmFlags is the VmFlags line of /proc/self/smaps for the mapping that
// holds addr.
func vmFlags(addr uintptr) (string, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return "", err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	in := false
	for s.Scan() {
		line := s.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x ", &lo, &hi); n == 2 {
			in = lo <= addr && addr < hi
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return strings.TrimSpace(strings.TrimPrefix(line, "VmFlags:")), nil
		}
	}
	return "", fmt.Errorf("no mapping holds %x in /proc/self/smaps (%v)", addr, s.Err())
}
