package plan

import (
	"os"
	"regexp"
	"slices"

	"gopkg.in/yaml.v3"
)

// envRef is ${NAME} in a plan's value, or $${, a literal ${.
var envRef = regexp.MustCompile(`\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// shellKeys hold shell commands: their ${NAME} is the shell's, which
// reads it when the command runs — from iolab's environment and the
// variant's env:, which a plan-wide value cannot know.
var shellKeys = []string{"run", "build", "start", "cmd", "prepare"}

// environ fills ${NAME} in the plan's values from iolab's environment, as
// a shell fills a word: `repo: ${HOME}/src/x`. A name that is not set is
// refused where it is written; $${ is a literal ${. Values of commands a
// shell runs (run:, build:, start:, the hooks) are left to that shell, and
// ${...} that is not a bare name (${#x}, ${X:-y}) is left as it is.
func (r reader) environ(n *yaml.Node, key string) error {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			if key == "hooks" || slices.Contains(shellKeys, k) && n.Content[i+1].Kind == yaml.ScalarNode {
				continue
			}
			if err := r.environValue(n, i+1, k); err != nil {
				return err
			}
		}
	case yaml.SequenceNode, yaml.DocumentNode:
		for i := range n.Content {
			if err := r.environValue(n, i, key); err != nil {
				return err
			}
		}
	}
	return nil
}

// environValue fills the i-th child of n, a scalar in a copy of its own
// (an alias's node is shared).
func (r reader) environValue(n *yaml.Node, i int, key string) error {
	c := n.Content[i]
	if c.Kind != yaml.ScalarNode {
		return r.environ(c, key)
	}
	if !envRef.MatchString(c.Value) {
		return nil
	}
	var missing string
	value := envRef.ReplaceAllStringFunc(c.Value, func(m string) string {
		if m == "$${" {
			return "${"
		}
		name := m[2 : len(m)-1]
		v, ok := os.LookupEnv(name)
		if !ok && missing == "" {
			missing = name
		}
		return v
	})
	if missing != "" {
		return r.pos(c).Errorf("${%s}: not set in iolab's environment; set it (export %s=...), or write $${%s} for the text itself", missing, missing, missing)
	}
	filled := *c
	filled.Value = value
	n.Content[i] = &filled
	return nil
}
