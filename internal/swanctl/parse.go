package swanctl

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// Parse reads a swanctl.conf document: "name {" opens a section, "}" closes
// it, "key = value" sets a value (optionally double-quoted, with Go-style
// escapes), '#' starts a comment outside quotes. One statement per line;
// include statements and section references are not supported. Errors name
// the line.
func Parse(data []byte) (*Section, error) {
	root := &Section{}
	stack := []*Section{root}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		line, err := StripComment(sc.Text())
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		line = strings.TrimSpace(line)
		cur := stack[len(stack)-1]
		switch {
		case line == "":
		case line == "}":
			if len(stack) == 1 {
				return nil, fmt.Errorf("line %d: '}' closes no section", n)
			}
			stack = stack[:len(stack)-1]
		case strings.HasSuffix(line, "{"):
			name := strings.TrimSpace(strings.TrimSuffix(line, "{"))
			if !validName.MatchString(name) {
				return nil, fmt.Errorf("line %d: invalid section name %q", n, name)
			}
			stack = append(stack, cur.Section(name))
		default:
			key, value, ok := strings.Cut(line, "=")
			key = strings.TrimSpace(key)
			if !ok || !validName.MatchString(key) {
				return nil, fmt.Errorf("line %d: want 'key = value', 'name {' or '}'", n)
			}
			v, err := unquote(strings.TrimSpace(value))
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			cur.Set(key, v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(stack) != 1 {
		return nil, fmt.Errorf("section %q is not closed", stack[len(stack)-1].Name)
	}
	return root, nil
}

// StripComment removes a '#' comment that is not inside double quotes from
// one line, as swanctl.conf's parser does (nftables scripts follow the same
// rule). A backslash inside quotes escapes the next character. It returns
// an error when a quote is left open.
func StripComment(line string) (string, error) {
	quoted := false
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '\\':
			if quoted {
				i++
			}
		case '"':
			quoted = !quoted
		case '#':
			if !quoted {
				return line[:i], nil
			}
		}
	}
	if quoted {
		return "", fmt.Errorf("unterminated quoted value")
	}
	return line, nil
}

func unquote(v string) (string, error) {
	if !strings.HasPrefix(v, `"`) {
		return v, nil
	}
	s, err := strconv.Unquote(v)
	if err != nil {
		return "", fmt.Errorf("invalid quoted value: %w", err)
	}
	return s, nil
}
