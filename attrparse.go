package stead

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/steadhq/stead/internal/check"
)

// ParseAttributeFilter reads one attribute condition as an operator types it, for the CLI's
// --where and the console's filter fields:
//
//	customer=42              an integer (decimal, optionally signed)
//	amount>100  amount<=9.5  ranges: <, <=, >, >= ("9.5" is no integer, so it is a string)
//	paid=true                a boolean (true or false)
//	due<2026-12-24T00:00:00Z a time (RFC 3339)
//	region=eu-west           any other bare value is a string
//	customer="42"            a quoted value (Go syntax) is always a string
//	tier in (gold, "silver") set membership: 1 to MaxAttrIn values of one kind
//
// Spaces around the key, the comparison and the values are ignored; a bare value runs to the end
// (or, in a set, to the next comma or the closing parenthesis). The condition is checked as a
// listing checks it; an error wraps ErrInvalid.
func ParseAttributeFilter(s string) (AttrFilter, error) {
	in := strings.TrimSpace(s)
	end := 0
	for end < len(in) && isKeyByte(in[end]) {
		end++
	}
	f := AttrFilter{Key: in[:end]}
	if err := CheckAttrKey(f.Key); err != nil {
		return AttrFilter{}, check.Invalidf("attribute condition %q: %v", s, err)
	}
	rest := strings.TrimLeft(in[end:], " \t")
	switch {
	case strings.HasPrefix(rest, "<="), strings.HasPrefix(rest, ">="):
		f.Op, rest = AttrOp(rest[:2]), rest[2:]
	case strings.HasPrefix(rest, "=="):
		f.Op, rest = AttrEq, rest[2:]
	case strings.HasPrefix(rest, "="), strings.HasPrefix(rest, "<"), strings.HasPrefix(rest, ">"):
		f.Op, rest = AttrOp(rest[:1]), rest[1:]
	case len(rest) > 2 && strings.EqualFold(rest[:2], "in") && (rest[2] == ' ' || rest[2] == '\t' || rest[2] == '('):
		f.Op, rest = AttrIn, rest[2:]
	default:
		return AttrFilter{}, check.Invalidf("attribute condition %q: want a comparison (=, <, <=, >, >=, in) after %q", s, f.Key)
	}
	rest = strings.TrimSpace(rest)
	var err error
	if f.Op == AttrIn {
		f.Values, err = parseAttrSet(rest)
	} else {
		var v AttrValue
		v, err = parseAttrValue(rest)
		f.Values = []AttrValue{v}
	}
	if err != nil {
		return AttrFilter{}, check.Invalidf("attribute condition %q: %v", s, err)
	}
	if _, err := checkAttrFilters([]AttrFilter{f}); err != nil {
		return AttrFilter{}, err
	}
	return f, nil
}

func isKeyByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-'
}

// parseAttrSet reads "(v, v, …)".
func parseAttrSet(s string) ([]AttrValue, error) {
	if len(s) < 2 || s[0] != '(' || s[len(s)-1] != ')' {
		return nil, fmt.Errorf("a set is written (v1, v2, …)")
	}
	s = s[1 : len(s)-1]
	var out []AttrValue
	for {
		s = strings.TrimLeft(s, " \t")
		var tok string
		if s != "" && s[0] == '"' {
			q, err := strconv.QuotedPrefix(s)
			if err != nil {
				return nil, fmt.Errorf("unterminated or malformed quoted value")
			}
			tok, s = q, s[len(q):]
		} else {
			i := strings.IndexByte(s, ',')
			if i < 0 {
				i = len(s)
			}
			tok, s = s[:i], s[i:]
		}
		v, err := parseAttrValue(tok)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		if len(out) > MaxAttrIn {
			return nil, fmt.Errorf("a set of more than %d values", MaxAttrIn)
		}
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			return out, nil
		}
		if s[0] != ',' {
			return nil, fmt.Errorf("want a comma between the values of a set")
		}
		s = s[1:]
	}
}

// parseAttrValue reads one value: quoted, it is a string; bare, the first of boolean, integer
// and RFC 3339 time it reads as, or else a string.
func parseAttrValue(s string) (AttrValue, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return AttrValue{}, fmt.Errorf("no value")
	case s[0] == '"':
		u, err := strconv.Unquote(s)
		if err != nil {
			return AttrValue{}, fmt.Errorf("malformed quoted value %s", s)
		}
		return AttrString(u), nil
	case s == "true" || s == "false":
		return AttrBool(s == "true"), nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return AttrInt(n), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return AttrTime(t), nil
	}
	return AttrString(s), nil
}
