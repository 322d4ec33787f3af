package cli

import (
	"bytes"

	"gopkg.in/yaml.v3"

	"github.com/iolab/iolab/internal/flagval"
	"github.com/iolab/iolab/internal/redact"
)

// redactPlan is the plan text as an experiment stores it: the values of
// secret keys (bearer:, basic:, login-body:, secret-key:, env entries such
// as AWS_SECRET_ACCESS_KEY), secret headers and form fields, and URL
// passwords masked, and any registered secret scrubbed. A plan with none
// keeps its text as written; one with some is re-encoded from its YAML tree.
func redactPlan(text []byte) string {
	var doc yaml.Node
	if yaml.NewDecoder(bytes.NewReader(text)).Decode(&doc) != nil {
		return redact.String(string(text))
	}
	if !maskSecrets(&doc) {
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

// maskSecrets masks secret values below n and reports whether it changed
// any.
func maskSecrets(n *yaml.Node) bool {
	changed := false
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if v.Kind != yaml.ScalarNode {
				continue
			}
			masked := v.Value
			switch {
			case k.Value == "header" || k.Value == "H":
				masked = flagval.MaskPair(v.Value, ":", nil)
			case k.Value == "form":
				masked = flagval.MaskPair(v.Value, "=", nil)
			case redact.IsSecretName(k.Value):
				masked = redact.Mask
				redact.Secret(v.Value)
				flagval.RegisterBodySecrets(v.Value)
			default:
				masked = redact.URL(v.Value)
			}
			if masked != v.Value {
				v.Value, v.Style, changed = masked, 0, true
			}
		}
	}
	for _, c := range n.Content {
		if maskSecrets(c) {
			changed = true
		}
	}
	return changed
}
