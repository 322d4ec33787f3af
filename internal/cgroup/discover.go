package cgroup

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// hierarchies are iolab's own cgroups: its directory in the unified (v2)
// hierarchy and in each v1 hierarchy, by controller.
type hierarchies struct {
	v2       string   // "" when no cgroup2 is mounted
	v2Ctrls  []string // the controllers v2 offers iolab's cgroup
	v1       map[string]string
	v2Subtrl string // v2's cgroup.subtree_control of iolab's cgroup
}

// discover reads where iolab's cgroups are, from /proc/self/cgroup and
// /proc/self/mountinfo.
func discover() (*hierarchies, error) {
	cg, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("limits: cgroups: %w", err)
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("limits: cgroups: %w", err)
	}
	h := parse(string(cg), string(mi))
	if h.v2 != "" {
		b, _ := os.ReadFile(filepath.Join(h.v2, "cgroup.controllers"))
		h.v2Ctrls = strings.Fields(string(b))
		h.v2Subtrl = filepath.Join(h.v2, "cgroup.subtree_control")
	}
	return h, nil
}

// parse finds iolab's directory in every mounted hierarchy. A mount of a
// hierarchy's subtree (a container's) has that subtree as its root in
// mountinfo: the path is taken relative to it.
func parse(selfCgroup, mountinfo string) *hierarchies {
	h := &hierarchies{v1: map[string]string{}}
	paths := map[string]string{} // "" for v2, else the v1 controller list
	for _, line := range strings.Split(strings.TrimSpace(selfCgroup), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[0] == "0" && f[1] == "" {
			paths[""] = f[2]
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			paths[c] = f[2]
		}
	}
	for _, line := range strings.Split(mountinfo, "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 3 {
			continue
		}
		root, mnt := f[3], unescape(f[4])
		switch g[0] {
		case "cgroup2":
			if p, ok := paths[""]; ok {
				h.v2 = join(mnt, root, p)
			}
		case "cgroup":
			for _, opt := range strings.Split(g[2], ",") {
				if p, ok := paths[opt]; ok && (opt == "memory" || opt == "cpu" || opt == "cpuacct") {
					h.v1[opt] = join(mnt, root, p)
				}
			}
		}
	}
	return h
}

func join(mnt, root, p string) string {
	if root != "/" {
		if rel, ok := strings.CutPrefix(p, root); ok {
			p = rel
		}
	}
	return filepath.Join(mnt, p)
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var c byte
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &c); err == nil {
				b.WriteByte(c)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// all are the directories iolab's groups may be in.
func (h *hierarchies) all() []string {
	var out []string
	if h.v2 != "" {
		out = append(out, h.v2)
	}
	for _, p := range h.v1 {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// choose picks where a group with lim goes: v2 when it offers every
// controller lim needs, else the v1 hierarchies (with cpuacct, where
// mounted, for CPU time).
func (h *hierarchies) choose(lim Limits) ([]dir, error) {
	var need []string
	if lim.Memory > 0 {
		need = append(need, "memory")
	}
	if lim.CPUs > 0 {
		need = append(need, "cpu")
	}
	if h.v2 != "" && allIn(need, h.v2Ctrls) {
		if err := h.enable(need); err != nil {
			return nil, err
		}
		return []dir{{path: h.v2, v2: true, memory: lim.Memory > 0, cpu: lim.CPUs > 0}}, nil
	}
	var dirs []dir
	add := func(path string, d dir) {
		for i := range dirs {
			if dirs[i].path == path { // co-mounted (cpu,cpuacct)
				dirs[i].memory, dirs[i].cpu, dirs[i].cpuacct = dirs[i].memory || d.memory, dirs[i].cpu || d.cpu, dirs[i].cpuacct || d.cpuacct
				return
			}
		}
		d.path = path
		dirs = append(dirs, d)
	}
	for _, c := range need {
		p, ok := h.v1[c]
		if !ok {
			where := "no cgroup2 is mounted"
			if h.v2 != "" {
				where = fmt.Sprintf("cgroup v2 at %s offers %q", h.v2, strings.Join(h.v2Ctrls, " "))
			}
			return nil, fmt.Errorf("limits (%s): no %s controller for iolab's cgroup (%s, and no v1 %s hierarchy is mounted)", lim, c, where, c)
		}
		add(p, dir{memory: c == "memory", cpu: c == "cpu"})
	}
	if p, ok := h.v1["cpuacct"]; ok {
		add(p, dir{cpuacct: true})
	}
	return dirs, nil
}

// enable makes v2 controllers available to iolab's child groups.
func (h *hierarchies) enable(ctrls []string) error {
	b, _ := os.ReadFile(h.v2Subtrl)
	on := strings.Fields(string(b))
	for _, c := range ctrls {
		if slices.Contains(on, c) {
			continue
		}
		if err := write(h.v2Subtrl, "+"+c); err != nil {
			return fmt.Errorf("limits: cannot enable the %s controller for groups below iolab's cgroup %s (%w); a cgroup v2 group that holds processes cannot give controllers to children: start iolab in a cgroup of its own (e.g. systemd-run --scope -p Delegate=yes)", c, h.v2, err)
		}
	}
	return nil
}

func allIn(need, have []string) bool {
	for _, c := range need {
		if !slices.Contains(have, c) {
			return false
		}
	}
	return true
}
