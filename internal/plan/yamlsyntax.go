package plan

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	goccy "github.com/goccy/go-yaml"
	goccyparser "github.com/goccy/go-yaml/parser"
	"gopkg.in/yaml.v3"
)

// syntaxError turns yaml.v3's error for text into one that names
// file:line:column. yaml.v3 reports no column, sometimes the wrong line (the
// line a flow collection started on) and sometimes no position at all
// ("EOF", "mapping values are not allowed in this context"), so the place is
// found apart: by a second, independent YAML parser (goccy/go-yaml), which
// reports the token at fault, or from the text itself.
func syntaxError(file string, text []byte, err error) error {
	msg := strings.ReplaceAll(strings.TrimPrefix(err.Error(), "yaml: "), "\n", "; ")
	line, col := 0, 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	switch {
	case !utf8.Valid(text):
		line, col = invalidUTF8(text)
		msg = "invalid UTF-8; a plan is UTF-8 text"
	case len(strings.TrimSpace(string(text))) == 0 || msg == "EOF":
		line, col = endOf(text)
		msg = "empty plan; want a mapping with workloads:"
	default:
		if l, c, m, ok := locate(text); ok {
			line, col, msg = l, c, m
		}
	}
	if line < 1 {
		line = 1
	}
	if col < 1 {
		col = firstNonBlank(text, line)
	}
	return fmt.Errorf("%s:%d:%d: %s%s", file, line, col, msg, remedy(text, line))
}

// remedy is what to change on a line YAML could not read, where the
// mistake is a common one: a tab in its indent, or ${NAME} unquoted in
// a {...} or [...] (whose braces YAML reads as its own).
func remedy(text []byte, line int) string {
	lines := strings.Split(string(text), "\n")
	if line > len(lines) {
		return ""
	}
	l := lines[line-1]
	indent := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
	switch {
	case strings.Contains(indent, "\t"):
		return "; YAML indents with spaces, never tabs: put spaces for the tab at the start of the line"
	case strings.Contains(l, "${") && strings.ContainsAny(l, "{[") && strings.Index(l, "${") > strings.IndexAny(l, "{["):
		return `; a value holding ${NAME} inside {...} or [...] is quoted, as {repo: "${HOME}/x"}`
	}
	return ""
}

var yamlLine = regexp.MustCompile(`^line (\d+): (.*)$`)

// locate asks goccy/go-yaml where the text goes wrong.
func locate(text []byte) (line, col int, msg string, ok bool) {
	_, err := goccyparser.ParseBytes(text, 0)
	var se *goccy.SyntaxError
	if !errors.As(err, &se) || se.GetToken() == nil || se.GetToken().Position == nil {
		return 0, 0, "", false
	}
	p := se.GetToken().Position
	return p.Line, p.Column, se.GetMessage(), true
}

func invalidUTF8(text []byte) (line, col int) {
	line, col = 1, 1
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRune(text[i:])
		if r == utf8.RuneError && n <= 1 {
			return line, col
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		i += n
	}
	return line, col
}

func endOf(text []byte) (line, col int) {
	lines := strings.Split(string(text), "\n")
	last := lines[len(lines)-1]
	return len(lines), utf8.RuneCountInString(last) + 1
}

// firstNonBlank is the column of line's first character that is not a
// space or tab, or 1.
func firstNonBlank(text []byte, line int) int {
	lines := strings.Split(string(text), "\n")
	if line > len(lines) {
		return 1
	}
	l := lines[line-1]
	return utf8.RuneCountInString(l[:len(l)-len(strings.TrimLeft(l, " \t"))]) + 1
}

// The caps a plan's text meets before it is parsed: a YAML parser's
// memory grows with the nesting of flow collections ([[[[...), so a
// 200 KB plan of 100,000 brackets took 15 GiB before its depth error.
const (
	MaxPlanBytes   = 4 << 20
	maxPlanNesting = 64
)

// checkCaps refuses, in one pass over the bytes, a plan longer than
// MaxPlanBytes or whose flow collections ([ ], { }) nest deeper than
// maxPlanNesting, naming where; brackets in quoted strings and comments
// do not count.
func checkCaps(file string, text []byte) error {
	if len(text) > MaxPlanBytes {
		return fmt.Errorf("%s: %d bytes; a plan may hold at most %d (4 MiB)", file, len(text), MaxPlanBytes)
	}
	line, col, depth := 1, 0, 0
	var quote byte
	comment := false
	for i := 0; i < len(text); i++ {
		c := text[i]
		col++
		switch {
		case c == '\n': // a quote left open counts brackets again
			line, col, comment, quote = line+1, 0, false, 0
			continue
		case comment:
			continue
		case quote != 0:
			if c == quote {
				quote = 0
			} else if c == '\\' && quote == '"' {
				i++
				col++
			}
			continue
		}
		switch c {
		case '#':
			comment = i == 0 || text[i-1] == ' ' || text[i-1] == '\t'
		case '"', '\'':
			if i == 0 || strings.IndexByte(" \t[{,:-", text[i-1]) >= 0 { // a quoted scalar begins; not it's
				quote = c
			}
		case '[', '{':
			if depth++; depth > maxPlanNesting {
				return fmt.Errorf("%s:%d:%d: brackets nested deeper than %d levels; a plan nests far less", file, line, col, maxPlanNesting)
			}
		case ']', '}':
			depth = max(depth-1, 0)
		}
	}
	return nil
}

// ReadFile reads a plan, at most MaxPlanBytes of it (a path such as
// /dev/zero never ends).
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	text, err := io.ReadAll(io.LimitReader(f, MaxPlanBytes+1))
	if err != nil {
		return nil, err
	}
	if len(text) > MaxPlanBytes {
		return nil, fmt.Errorf("more than %d bytes; a plan may hold at most 4 MiB", MaxPlanBytes)
	}
	return text, nil
}

// maxExpandedNodes bounds the nodes a plan expands to through aliases, so
// that a few nested aliases (a "billion laughs") cannot exhaust memory or
// time.
const maxExpandedNodes = 100_000

// expand resolves aliases (*name) and merge keys (<<: *name, or a list of
// them) into plain nodes, so the reader sees what the YAML means. Keys
// written in a mapping win over merged ones; of several merged mappings,
// the earlier wins, as YAML's merge key defines.
func (r reader) expand(n *yaml.Node, depth int, budget *int) (*yaml.Node, error) {
	if *budget--; *budget < 0 {
		return nil, r.pos(n).Errorf("aliases expand the plan past %d nodes", maxExpandedNodes)
	}
	if depth > 100 {
		return nil, r.pos(n).Errorf("nesting deeper than 100 levels (an alias that refers to itself?)")
	}
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias == nil {
			return nil, r.pos(n).Errorf("alias *%s refers to no anchor", n.Value)
		}
		return r.expand(n.Alias, depth+1, budget)
	case yaml.DocumentNode, yaml.SequenceNode:
		out := *n
		out.Content = make([]*yaml.Node, len(n.Content))
		for i, c := range n.Content {
			var err error
			if out.Content[i], err = r.expand(c, depth+1, budget); err != nil {
				return nil, err
			}
		}
		return &out, nil
	case yaml.MappingNode:
		return r.expandMapping(n, depth, budget)
	}
	return n, nil
}

func (r reader) expandMapping(n *yaml.Node, depth int, budget *int) (*yaml.Node, error) {
	out := *n
	out.Content = nil
	have := map[string]bool{}
	var merged []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Value == "<<" && k.Tag != "!!str" {
			sources := []*yaml.Node{v}
			if v.Kind == yaml.SequenceNode {
				sources = v.Content
			}
			for _, src := range sources {
				m, err := r.expand(src, depth+1, budget)
				if err != nil {
					return nil, err
				}
				if m.Kind != yaml.MappingNode {
					return nil, r.pos(src).Errorf("<<: merges a mapping (<<: *name), not a %s", kindName(m))
				}
				merged = append(merged, m.Content...)
			}
			continue
		}
		ev, err := r.expand(v, depth+1, budget)
		if err != nil {
			return nil, err
		}
		have[k.Value] = true
		out.Content = append(out.Content, k, ev)
	}
	for i := 0; i+1 < len(merged); i += 2 {
		if k := merged[i]; !have[k.Value] {
			have[k.Value] = true
			out.Content = append(out.Content, k, merged[i+1])
		}
	}
	return &out, nil
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		return "single value"
	}
	return "node"
}
