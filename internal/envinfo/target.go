package envinfo

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Target describes the filesystem and device under a path.
type Target struct {
	Path         string `json:"path"`
	MountPoint   string `json:"mount_point,omitempty"`
	FSType       string `json:"fs_type,omitempty"`
	MountOptions string `json:"mount_options,omitempty"`
	Source       string `json:"source,omitempty"`
	// Device is the kernel name of the whole block device (vda, nvme0n1).
	Device string `json:"device,omitempty"`
	Model  string `json:"model,omitempty"`
	// Rotational is what the kernel's queue/rotational flag says; VM disks
	// often say 1 for storage that is not a spinning disk.
	Rotational *bool  `json:"rotational,omitempty"`
	Scheduler  string `json:"scheduler,omitempty"`
	FreeBytes  int64  `json:"free_bytes"`
	TotalBytes int64  `json:"total_bytes"`
}

func inspectTarget(path string) *Target {
	t := &Target{Path: path}
	abs, err := filepath.Abs(path)
	if err == nil {
		if r, err := filepath.EvalSymlinks(abs); err == nil {
			abs = r
		}
	}
	var st unix.Statfs_t
	if unix.Statfs(abs, &st) == nil {
		t.FreeBytes = int64(st.Bavail) * st.Bsize
		t.TotalBytes = int64(st.Blocks) * st.Bsize
	}
	var majMin string
	best := -1
	for _, line := range strings.Split(readFile("/proc/self/mountinfo"), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 6 || len(g) < 2 {
			continue
		}
		mp := unescapeMount(f[4])
		if !within(abs, mp) || len(mp) <= best {
			continue
		}
		best = len(mp)
		t.MountPoint, t.MountOptions, majMin = mp, f[5], f[2]
		t.FSType, t.Source = g[0], g[1]
	}
	if st, err := os.Stat(abs); err == nil && st.Mode()&os.ModeDevice != 0 {
		var s unix.Stat_t
		if unix.Stat(abs, &s) == nil {
			majMin = formatDev(s.Rdev)
		}
	}
	if majMin != "" {
		t.describeDevice(majMin)
	}
	return t
}

func formatDev(dev uint64) string {
	return fmt.Sprintf("%d:%d", unix.Major(dev), unix.Minor(dev))
}

// describeDevice follows /sys/dev/block/MAJ:MIN to the whole disk (a
// partition's parent) and reads its model, rotational flag and scheduler.
func (t *Target) describeDevice(majMin string) {
	dir, err := filepath.EvalSymlinks("/sys/dev/block/" + majMin)
	if err != nil {
		return
	}
	if _, err := os.Stat(filepath.Join(dir, "partition")); err == nil {
		dir = filepath.Dir(dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "queue")); err != nil {
		return
	}
	t.Device = filepath.Base(dir)
	t.Model = strings.TrimSpace(readFile(filepath.Join(dir, "device", "model")))
	switch strings.TrimSpace(readFile(filepath.Join(dir, "queue", "rotational"))) {
	case "1":
		r := true
		t.Rotational = &r
	case "0":
		r := false
		t.Rotational = &r
	}
	t.Scheduler = strings.TrimSpace(readFile(filepath.Join(dir, "queue", "scheduler")))
}

func within(path, mountPoint string) bool {
	if mountPoint == "/" {
		return true
	}
	return path == mountPoint || strings.HasPrefix(path, mountPoint+"/")
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			v := (s[i+1]-'0')*64 + (s[i+2]-'0')*8 + (s[i+3] - '0')
			b.WriteByte(v)
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
