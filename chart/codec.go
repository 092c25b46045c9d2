package chart

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// The context is decoded and encoded on most steps that run an action, so these are hand-written
// fast paths for what encoding/json would do through reflection. Each gives the bytes
// encoding/json gives, or falls back to it.

var errNotObject = errors.New("not a JSON object")

// decodeObject splits a JSON object into its members. The values are slices of one copy of raw,
// so that nothing a caller does with them reaches raw.
func decodeObject(raw []byte) (map[string]json.RawMessage, error) {
	if !validJSON(raw) {
		var m map[string]json.RawMessage
		return nil, json.Unmarshal(raw, &m) // its error says what is wrong
	}
	buf := bytes.Clone(raw)
	i := skipSpace(buf, 0)
	if i >= len(buf) || buf[i] != '{' {
		return nil, errNotObject
	}
	m := make(map[string]json.RawMessage, 8)
	i = skipSpace(buf, i+1)
	if i < len(buf) && buf[i] == '}' {
		return m, nil
	}
	for i < len(buf) {
		end := skipString(buf, i)
		key := buf[i+1 : end-1]
		var k string
		if bytes.IndexByte(key, '\\') >= 0 || !utf8.Valid(key) {
			// Escapes to resolve, or bytes encoding/json replaces with U+FFFD.
			if err := json.Unmarshal(buf[i:end], &k); err != nil {
				return nil, err
			}
		} else {
			k = string(key)
		}
		i = skipSpace(buf, end)
		i = skipSpace(buf, i+1) // the colon
		vEnd := skipValue(buf, i)
		m[k] = buf[i:vEnd:vEnd]
		i = skipSpace(buf, vEnd)
		if buf[i] == '}' {
			return m, nil
		}
		i = skipSpace(buf, i+1) // the comma
	}
	return nil, errNotObject
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] (a '"').
func skipString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

// skipValue returns the index after the (valid) JSON value starting at b[i].
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = skipString(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	}
	j := i
	for j < len(b) {
		switch b[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return j
		}
		j++
	}
	return j
}

// encodeObject encodes members as encoding/json encodes a map[string]json.RawMessage: keys
// sorted, values compacted with HTML characters escaped.
func encodeObject(m map[string]json.RawMessage) ([]byte, error) {
	var small [16]string
	keys := small[:0]
	n := 2
	for k, v := range m {
		keys = append(keys, k)
		n += len(k) + len(v) + 4
	}
	slices.Sort(keys)
	out := make([]byte, 0, n)
	out = append(out, '{')
	for i, k := range keys {
		if i > 0 {
			out = append(out, ',')
		}
		if plainString(k) {
			out = append(out, '"')
			out = append(out, k...)
			out = append(out, '"')
		} else {
			kb, err := json.Marshal(k)
			if err != nil {
				return nil, err
			}
			out = append(out, kb...)
		}
		out = append(out, ':')
		v := m[k]
		switch {
		case len(v) == 0:
			out = append(out, "null"...)
		case plainJSON(v):
			out = append(out, v...)
		default:
			var c bytes.Buffer
			if err := json.Compact(&c, v); err != nil {
				return nil, err
			}
			var e bytes.Buffer
			json.HTMLEscape(&e, c.Bytes())
			out = append(out, e.Bytes()...)
		}
	}
	return append(out, '}'), nil
}

// plainString reports whether s encodes as itself between quotes.
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

func plainBytes(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// plainJSON reports whether a valid JSON value is already compact and free of what
// encoding/json escapes (HTML characters, U+2028 and U+2029, which start with 0xE2).
func plainJSON(v []byte) bool {
	inString := false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '<', '>', '&', 0xE2:
			return false
		case ' ', '\t', '\n', '\r':
			if !inString {
				return false
			}
		case '"':
			inString = !inString
		case '\\':
			if inString {
				i++
			}
		}
	}
	return true
}

// encodeValue is json.Marshal with fast paths for the values actions set most.
func encodeValue(v any) (json.RawMessage, error) { return appendValue(nil, v) }

// appendValue appends v encoded to dst (for the fast paths; others are marshalled on their own).
func appendValue(dst []byte, v any) (json.RawMessage, error) {
	switch x := v.(type) {
	case float64:
		if b, ok := appendFloat(dst, x); ok {
			return b, nil
		}
	case int:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(dst, x, 10), nil
	case bool:
		if x {
			return append(dst, "true"...), nil
		}
		return append(dst, "false"...), nil
	case string:
		if plainString(x) {
			dst = append(dst, '"')
			dst = append(dst, x...)
			return append(dst, '"'), nil
		}
	}
	return json.Marshal(v)
}

// appendFloat appends f as encoding/json writes it, when f is in the range written without an
// exponent (ok false otherwise: the caller marshals it).
func appendFloat(dst []byte, f float64) ([]byte, bool) {
	a := math.Abs(f)
	if f != 0 && (a < 1e-6 || a >= 1e21) || math.IsNaN(f) {
		return dst, false
	}
	if a < 1<<53 && f == math.Trunc(f) && !(f == 0 && math.Signbit(f)) {
		return strconv.AppendInt(dst, int64(f), 10), true // the digits 'f' would give, faster
	}
	return strconv.AppendFloat(dst, f, 'f', -1, 64), true
}

// member is one key and value of a JSON object.
type member struct {
	key string
	val json.RawMessage
}

// setMember sets key in members sorted by key.
func setMember(ms []member, key string, val json.RawMessage) []member {
	i, found := slices.BinarySearchFunc(ms, key, func(m member, k string) int {
		switch {
		case m.key < k:
			return -1
		case m.key > k:
			return 1
		}
		return 0
	})
	if found {
		ms[i].val = val
		return ms
	}
	return slices.Insert(ms, i, member{key, val})
}

// lookupMember finds key among the members of a valid JSON object without decoding it. ok is
// false when it cannot tell (a key with escapes), and the caller decodes instead.
func lookupMember(raw []byte, key string) (val json.RawMessage, found, ok bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) {
		return nil, false, true // the empty context
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return nil, false, true
	}
	for i < len(raw) {
		end := skipString(raw, i)
		k := raw[i+1 : end-1]
		if bytes.IndexByte(k, '\\') >= 0 || !utf8.Valid(k) {
			return nil, false, false
		}
		i = skipSpace(raw, end)
		i = skipSpace(raw, i+1)
		vEnd := skipValue(raw, i)
		if string(k) == key {
			val = raw[i:vEnd:vEnd] // a later duplicate wins, as in encoding/json
			found = true
		}
		i = skipSpace(raw, vEnd)
		if raw[i] == '}' {
			return val, found, true
		}
		i = skipSpace(raw, i+1)
	}
	return nil, false, false
}

// mergeMembers encodes the valid JSON object raw with patch (sorted) set, giving the bytes
// encodeObject gives for the merged map, when raw's keys are plain and strictly increasing
// (as every context the engine encodes has them); otherwise ok is false.
func mergeMembers(raw []byte, patch []member) ([]byte, bool) {
	return mergeMembersInto(nil, raw, patch)
}

// mergeMembersInto is mergeMembers writing into dst's space when the result surely fits.
func mergeMembersInto(dst, raw []byte, patch []member) ([]byte, bool) {
	n := len(raw) + 2
	for _, p := range patch {
		if !plainString(p.key) {
			return nil, false
		}
		n += len(p.key) + len(p.val) + 4
	}
	out := dst[:0]
	if cap(out) < n {
		out = make([]byte, 0, n)
	}
	out = append(out, '{')
	first := true
	emit := func(k []byte, v []byte) {
		if !first {
			out = append(out, ',')
		}
		first = false
		out = append(out, '"')
		out = append(out, k...)
		out = append(out, '"', ':')
		out = append(out, v...)
	}
	i := skipSpace(raw, 0)
	var prev []byte
	if i < len(raw) {
		i = skipSpace(raw, i+1)
		if i < len(raw) && raw[i] == '}' {
			i = len(raw)
		}
	}
	for i < len(raw) {
		end := skipString(raw, i)
		k := raw[i+1 : end-1]
		if !plainBytes(k) || prev != nil && bytes.Compare(k, prev) <= 0 {
			return nil, false
		}
		prev = k
		i = skipSpace(raw, end)
		i = skipSpace(raw, i+1)
		vEnd := skipValue(raw, i)
		v := raw[i:vEnd]
		for len(patch) > 0 && patch[0].key < string(k) {
			emit([]byte(patch[0].key), patch[0].val)
			patch = patch[1:]
		}
		switch {
		case len(patch) > 0 && patch[0].key == string(k):
			emit(k, patch[0].val)
			patch = patch[1:]
		case !plainJSON(v):
			return nil, false
		default:
			emit(k, v)
		}
		i = skipSpace(raw, vEnd)
		if raw[i] == '}' {
			break
		}
		i = skipSpace(raw, i+1)
	}
	for _, p := range patch {
		emit([]byte(p.key), p.val)
	}
	return append(out, '}'), true
}

// validJSON is json.Valid, by hand for the shallow values contexts hold: json.Valid runs its
// scanner's state machine a function call per byte, which cost an action step more than the rest
// of its context handling. Values nested deeper than a few levels go to json.Valid.
func validJSON(b []byte) bool {
	v := jsonChecker{b: b}
	i, ok := v.value(skipSpace(b, 0), 0)
	if !ok {
		return v.deep && json.Valid(b)
	}
	return skipSpace(b, i) == len(b)
}

type jsonChecker struct {
	b    []byte
	deep bool // gave up on a deeply nested value: json.Valid decides
}

const jsonCheckerDepth = 32

// value checks the value at b[i] and returns the index after it.
func (v *jsonChecker) value(i, depth int) (int, bool) {
	b := v.b
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '"':
		return v.str(i)
	case c == '{' || c == '[':
		if depth >= jsonCheckerDepth {
			v.deep = true
			return i, false
		}
		return v.composite(i, depth)
	case c == '-' || c >= '0' && c <= '9':
		return v.number(i)
	case c == 't':
		return v.literal(i, "true")
	case c == 'f':
		return v.literal(i, "false")
	case c == 'n':
		return v.literal(i, "null")
	}
	return i, false
}

func (v *jsonChecker) composite(i, depth int) (int, bool) {
	b := v.b
	object, end := b[i] == '{', byte(']')
	if object {
		end = '}'
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == end {
		return i + 1, true
	}
	for {
		var ok bool
		if object {
			if i >= len(b) || b[i] != '"' {
				return i, false
			}
			if i, ok = v.str(i); !ok {
				return i, false
			}
			if i = skipSpace(b, i); i >= len(b) || b[i] != ':' {
				return i, false
			}
			i = skipSpace(b, i+1)
		}
		if i, ok = v.value(i, depth+1); !ok {
			return i, false
		}
		if i = skipSpace(b, i); i >= len(b) {
			return i, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case end:
			return i + 1, true
		default:
			return i, false
		}
	}
}

// str checks the string at b[i] (a '"'): no control characters, only JSON's escapes. Like
// json.Valid it does not check UTF-8.
func (v *jsonChecker) str(i int) (int, bool) {
	b := v.b
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return j + 1, true
		case c < 0x20:
			return j, false
		case c == '\\':
			if j++; j >= len(b) {
				return j, false
			}
			switch b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(b) {
					return j, false
				}
				for _, h := range b[j+1 : j+5] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return j, false
					}
				}
				j += 4
			default:
				return j, false
			}
		}
	}
	return len(b), false
}

func (v *jsonChecker) number(i int) (int, bool) {
	b := v.b
	digits := func(i int) (int, bool) {
		j := i
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		return j, j > i
	}
	if b[i] == '-' {
		i++
	}
	if i < len(b) && b[i] == '0' {
		i++
	} else {
		var ok bool
		if i, ok = digits(i); !ok {
			return i, false
		}
	}
	if i < len(b) && b[i] == '.' {
		var ok bool
		if i, ok = digits(i + 1); !ok {
			return i, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		var ok bool
		if i, ok = digits(i); !ok {
			return i, false
		}
	}
	return i, true
}

func (v *jsonChecker) literal(i int, lit string) (int, bool) {
	if len(v.b)-i < len(lit) || string(v.b[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}
