package fs

import (
	"encoding/hex"
	"fmt"
	"strings"
)

// patternValue is fio's buffer_pattern: hex (0xdeadbeef) or a quoted
// string ("abc"), repeated over every written block.
type patternValue struct {
	p    *[]byte
	text *string
}

func (v patternValue) String() string {
	if v.text == nil {
		return ""
	}
	return *v.text
}
func (v patternValue) Type() string { return "pattern" }
func (v patternValue) Set(s string) error {
	b, err := parsePattern(s)
	if err != nil {
		return err
	}
	*v.p, *v.text = b, s
	return nil
}

func parsePattern(s string) ([]byte, error) {
	if hexDigits, ok := strings.CutPrefix(strings.ToLower(s), "0x"); ok {
		if len(hexDigits)%2 == 1 {
			hexDigits = "0" + hexDigits
		}
		b, err := hex.DecodeString(hexDigits)
		if err == nil && len(b) > 0 {
			return b, nil
		}
	}
	if len(s) >= 3 && (s[0] == '"' || s[0] == '\'') && s[len(s)-1] == s[0] {
		return []byte(s[1 : len(s)-1]), nil
	}
	return nil, fmt.Errorf("%q: want hex (0xdeadbeef) or a quoted string (\"abc\"), as fio's buffer_pattern; fio's numbers and '|' mixes are not taken", s)
}
