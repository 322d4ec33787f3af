package plan

import (
	"bytes"
	"strings"
	"sync"

	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"

	"github.com/iolab/iolab/internal/badinput"
	"github.com/iolab/iolab/internal/flagval"
	"github.com/iolab/iolab/internal/redact"
	"github.com/iolab/iolab/internal/workload"
)

// Redact is the plan text as an experiment stores it: the values of
// secret keys (bearer:, basic:, login-body:, secret-key:, env entries such
// as AWS_SECRET_ACCESS_KEY), secret headers and form fields, and URL
// passwords masked, and any registered secret scrubbed. A plan with none
// keeps its text as written; one with some is re-encoded from its YAML tree.
func Redact(text []byte) string {
	var doc yaml.Node
	if yaml.NewDecoder(bytes.NewReader(text)).Decode(&doc) != nil {
		return redact.String(string(text))
	}
	if !MaskSecrets(&doc) {
		return redact.String(string(text))
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if enc.Encode(&doc) != nil || enc.Close() != nil {
		return redact.Mask // the text cannot be shown safely
	}
	return redact.String(out.String())
}

// MaskSecrets masks secret values below n (a plan's YAML tree) and
// reports whether it changed any.
func MaskSecrets(n *yaml.Node) bool {
	changed := false
	if n.Kind == yaml.MappingNode {
		// Each value of a key, a list's too (header: ["Authorization: ..."]).
		values := func(v *yaml.Node) []*yaml.Node {
			if v.Kind == yaml.SequenceNode {
				return v.Content
			}
			return []*yaml.Node{v}
		}
		var extra []string // secret-header: names
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i].Value; k == "secret-header" || k == "secret_header" {
				for _, v := range values(n.Content[i+1]) {
					extra = append(extra, v.Value)
				}
			}
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			for _, v := range values(n.Content[i+1]) {
				if v.Kind == yaml.ScalarNode && maskValue(n.Content[i].Value, v, extra) {
					changed = true
				}
			}
		}
	}
	for _, c := range n.Content {
		if MaskSecrets(c) {
			changed = true
		}
	}
	return changed
}

// maskValue masks the scalar v of plan key k if it is, or holds, a
// secret; extra are the names --secret-header adds.
func maskValue(k string, v *yaml.Node, extra []string) bool {
	masked := v.Value
	switch {
	case k == "header" || k == "H":
		masked = flagval.MaskPair(v.Value, ":", extra)
	case k == "form":
		masked = flagval.MaskPair(v.Value, "=", extra)
	case secretKey(k):
		masked = redact.Mask
		redact.Secret(v.Value)
		flagval.RegisterBodySecrets(v.Value)
	default:
		masked = redact.URL(v.Value)
	}
	if masked == v.Value {
		return false
	}
	v.Value, v.Style = masked, 0
	return true
}

// secretKey says whether plan key k holds a secret: by its meaning where
// it is an option of a workload kind (a secret flag: --secret-key,
// --bearer — never key-layout, whose "key" is an object's), else by its
// name (an environment variable's, a variable's: API_TOKEN).
func secretKey(k string) bool {
	options := secretOptions()
	for _, name := range []string{k, strings.ReplaceAll(k, "_", "-")} {
		if secret, known := options[name]; known {
			return secret
		}
	}
	return redact.IsSecretName(k)
}

// optionSecrecy is, for every option of the registered kinds, whether it
// is a secret (any kind's option of that name that is makes it one);
// made again when a kind is registered.
var optionSecrecy struct {
	sync.Mutex
	kinds  int
	secret map[string]bool
}

func secretOptions() map[string]bool {
	kinds := workload.Kinds()
	optionSecrecy.Lock()
	defer optionSecrecy.Unlock()
	if optionSecrecy.secret == nil || optionSecrecy.kinds != len(kinds) {
		m := map[string]bool{}
		for _, kind := range kinds {
			f := pflag.NewFlagSet(kind.Name, pflag.ContinueOnError)
			kind.NewOptions().AddFlags(f)
			f.VisitAll(func(fl *pflag.Flag) {
				_, secret := fl.Value.(flagval.Secret)
				m[fl.Name] = m[fl.Name] || secret
			})
		}
		optionSecrecy.kinds, optionSecrecy.secret = len(kinds), m
	}
	return optionSecrecy.secret
}

// ForLaunch reads the plan a launcher carries to every segment (a
// Kubernetes ConfigMap, a Slurm batch script): parsed, one whose load
// splits, holding no secret — where records the launcher keeps it, read
// by others ("a ConfigMap, readable by anyone who reads the namespace"),
// and keys says where its keys come from instead.
func ForLaunch(path, where, keys string) ([]byte, *Plan, error) {
	text, err := ReadFile(path)
	if err != nil {
		return nil, nil, badinput.Errorf("%s: %v", path, err)
	}
	p, err := Parse(path, text)
	if err != nil {
		return nil, nil, &badinput.Error{Err: err}
	}
	var doc yaml.Node
	if yaml.Unmarshal(text, &doc) == nil && MaskSecrets(&doc) {
		return nil, nil, badinput.Errorf("%s holds secrets (keys, tokens, passwords); %s: leave them out (%s)", path, where, keys)
	}
	if why := p.SplitError(); why != "" {
		return nil, nil, badinput.Errorf("%s: %s", path, why)
	}
	return text, p, nil
}
