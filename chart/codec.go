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
	if !json.Valid(raw) {
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
		if a := math.Abs(x); x == 0 || a >= 1e-6 && a < 1e21 {
			return strconv.AppendFloat(dst, x, 'f', -1, 64), nil
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
	n := len(raw) + 2
	for _, p := range patch {
		if !plainString(p.key) {
			return nil, false
		}
		n += len(p.key) + len(p.val) + 4
	}
	out := make([]byte, 0, n)
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
