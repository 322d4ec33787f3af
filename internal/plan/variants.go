package plan

import (
	"time"

	"gopkg.in/yaml.v3"
)

func (r reader) variants(n *yaml.Node, p *Plan) error {
	items, err := r.list(n, "variants")
	if err != nil {
		return err
	}
	for _, item := range items {
		v := Variant{Pos: r.pos(item), Stop: Stop{Signal: "TERM", Grace: 10 * time.Second}}
		if err := r.fields(item, "a variant", VariantKeys, func(key string, x *yaml.Node) error { return r.variantKey(&v, key, x) }); err != nil {
			return err
		}
		p.Variants = append(p.Variants, v)
	}
	return nil
}

// variantKey reads one key of a variant.
func (r reader) variantKey(v *Variant, key string, x *yaml.Node) error {
	var err error
	switch key {
	case "name":
		return r.str(x, "variant name", &v.Name)
	case "git":
		v.Git = &GitRef{}
		return r.fields(x, "git", []string{"repo", "ref"}, func(k string, y *yaml.Node) error {
			if k == "repo" {
				return r.str(y, "git.repo", &v.Git.Repo)
			}
			return r.str(y, "git.ref", &v.Git.Ref)
		})
	case "build":
		return r.str(x, key, &v.Build)
	case "start":
		return r.str(x, key, &v.Start)
	case "ready":
		return r.ready(x, v)
	case "stop":
		return r.fields(x, "stop", []string{"signal", "grace"}, func(k string, y *yaml.Node) error {
			if k == "signal" {
				return r.str(y, "stop.signal", &v.Stop.Signal)
			}
			return r.duration(y, "stop.grace", &v.Stop.Grace)
		})
	case "env":
		v.Env, err = r.stringMap(x, "env")
	case "vars":
		v.Vars, err = r.stringMap(x, "vars")
	case "workdir":
		return r.str(x, key, &v.Workdir)
	case "limits":
		v.Limits = &Limits{}
		return r.scalarPair(x, "limits", "memory", "cpus", &v.Limits.Memory, &v.Limits.CPUs)
	case "observe":
		v.Observe = &Observe{}
		return r.scalarPair(x, "observe", "pid", "pidfile", &v.Observe.PID, &v.Observe.PIDFile)
	case "profile":
		return r.profile(x, v)
	}
	return err
}

// ready reads a variant's ready: how iolab knows its server is up.
func (r reader) ready(x *yaml.Node, v *Variant) error {
	v.Ready = &Ready{Timeout: 30 * time.Second}
	return r.fields(x, "ready", []string{"http", "tcp", "cmd", "timeout"}, func(k string, y *yaml.Node) error {
		switch k {
		case "http":
			return r.str(y, "ready.http", &v.Ready.HTTP)
		case "tcp":
			return r.str(y, "ready.tcp", &v.Ready.TCP)
		case "cmd":
			return r.str(y, "ready.cmd", &v.Ready.Cmd)
		}
		return r.duration(y, "ready.timeout", &v.Ready.Timeout)
	})
}

// scalarPair reads a mapping of at most two scalar keys, a and b, into
// their places.
func (r reader) scalarPair(x *yaml.Node, what, a, b string, da, db *Value) error {
	return r.fields(x, what, []string{a, b}, func(k string, y *yaml.Node) error {
		dst := da
		if k == b {
			dst = db
		}
		var err error
		*dst, err = r.scalar(y, what+"."+k)
		return err
	})
}

// profile reads a variant's profile: what iolab records of its server.
func (r reader) profile(x *yaml.Node, v *Variant) error {
	v.Profile = &Profile{}
	return r.fields(x, "profile", []string{"go_pprof", "perf"}, func(k string, y *yaml.Node) error {
		val, err := r.scalar(y, "profile."+k)
		if k == "go_pprof" {
			v.Profile.GoPprof = val
			return err
		}
		switch val.Text {
		case "true":
			v.Profile.Perf = true
		case "false":
		default:
			return val.Pos.Errorf("profile.perf %q: want true or false", val.Text)
		}
		return err
	})
}
