package stead

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/steadhq/stead/internal/check"
)

// Attributes are typed labels an execution carries so that listings can find it by what it is
// about ("customer 42", "amount over 100"), not only by its id, definition and status. Each
// backend indexes them beside the execution; the record keeps them too, so Load returns them.
const (
	// MaxAttributes is how many attributes one execution carries at most, and how many attribute
	// conditions one listing holds at most.
	MaxAttributes = 16
	// MaxAttrKeyLen is the longest attribute key in bytes.
	MaxAttrKeyLen = 64
	// MaxAttrStringLen is the longest string attribute value in bytes: an index entry, not a
	// document.
	MaxAttrStringLen = 256
	// MaxAttrIn is how many values one set-membership condition (AttrIn) lists at most.
	MaxAttrIn = 100
)

// AttrKind is the type of an attribute value.
type AttrKind uint8

// The kinds of attribute values. The zero AttrValue has none: in Bundle.Attributes it deletes.
const (
	AttrKindString AttrKind = 1 + iota
	AttrKindInt
	AttrKindTime
	AttrKindBool
)

// String names the kind: string, int, time, bool, or none for the zero kind.
func (k AttrKind) String() string {
	switch k {
	case AttrKindString:
		return "string"
	case AttrKindInt:
		return "int"
	case AttrKindTime:
		return "time"
	case AttrKindBool:
		return "bool"
	}
	return "none"
}

// AttrValue is one attribute value: a string, an integer, a time or a boolean, made by
// AttrString, AttrInt, AttrTime or AttrBool. Values of different kinds never compare equal: a
// condition on an integer does not match a string that reads the same.
//
// Times are kept in UTC at microsecond precision, like every stored time, and integers, times
// (as unix microseconds) and booleans (0 and 1) share one numeric column in the SQL backends.
type AttrValue struct {
	kind AttrKind
	s    string
	n    int64
}

// AttrString returns a string value. Like every stored string it must be valid UTF-8 without
// NUL, and at most MaxAttrStringLen bytes; a store refuses it otherwise.
func AttrString(s string) AttrValue { return AttrValue{kind: AttrKindString, s: s} }

// AttrInt returns an integer value.
func AttrInt(n int64) AttrValue { return AttrValue{kind: AttrKindInt, n: n} }

// AttrTime returns a time value, truncated to the microsecond (the precision every backend
// stores). The zero time and times outside the years 1 to 9999 are refused by a store.
func AttrTime(t time.Time) AttrValue { return AttrValue{kind: AttrKindTime, n: t.UnixMicro()} }

// AttrBool returns a boolean value.
func AttrBool(b bool) AttrValue {
	v := AttrValue{kind: AttrKindBool}
	if b {
		v.n = 1
	}
	return v
}

// Kind is the value's type; the zero AttrValue has kind 0 ("none").
func (v AttrValue) Kind() AttrKind { return v.kind }

// IsZero reports whether v is the zero AttrValue, which holds no value.
func (v AttrValue) IsZero() bool { return v.kind == 0 }

// Str returns a string value ("" for another kind).
func (v AttrValue) Str() string {
	if v.kind != AttrKindString {
		return ""
	}
	return v.s
}

// Int returns an integer value (0 for another kind).
func (v AttrValue) Int() int64 {
	if v.kind != AttrKindInt {
		return 0
	}
	return v.n
}

// Time returns a time value in UTC (the zero time for another kind).
func (v AttrValue) Time() time.Time {
	if v.kind != AttrKindTime {
		return time.Time{}
	}
	return time.UnixMicro(v.n).UTC()
}

// Bool returns a boolean value (false for another kind).
func (v AttrValue) Bool() bool { return v.kind == AttrKindBool && v.n != 0 }

// Num is the value as the SQL backends store it in their numeric column: the integer, the unix
// microseconds of a time, 1 or 0 for a boolean (and 0 for a string).
func (v AttrValue) Num() int64 {
	if v.kind == AttrKindString {
		return 0
	}
	return v.n
}

// AttrFromColumns is the inverse of how the SQL backends store a value: its kind, its string
// column (strings) and its numeric column (Num, for every other kind). A kind it does not know
// is an error wrapping ErrInvalid: a row no store of this version wrote.
func AttrFromColumns(kind AttrKind, s string, n int64) (AttrValue, error) {
	switch kind {
	case AttrKindString:
		return AttrString(s), nil
	case AttrKindInt, AttrKindTime:
		return AttrValue{kind: kind, n: n}, nil
	case AttrKindBool:
		return AttrBool(n != 0), nil
	}
	return AttrValue{}, check.Invalidf("attribute of unknown kind %d", kind)
}

// String formats v as text, the way ParseAttributeFilter reads it back for every kind but a
// string that looks like another kind (ParseAttributeFilter takes a quoted string as a string).
func (v AttrValue) String() string {
	switch v.kind {
	case AttrKindString:
		return v.s
	case AttrKindInt:
		return strconv.FormatInt(v.n, 10)
	case AttrKindTime:
		return v.Time().Format(time.RFC3339Nano)
	case AttrKindBool:
		return strconv.FormatBool(v.n != 0)
	}
	return ""
}

// Compare orders two values of one kind (strings byte-wise, the others numerically); values of
// different kinds are ordered by kind.
func (v AttrValue) Compare(w AttrValue) int {
	if c := cmp.Compare(v.kind, w.kind); c != 0 {
		return c
	}
	if v.kind == AttrKindString {
		return cmp.Compare(v.s, w.s)
	}
	return cmp.Compare(v.n, w.n)
}

// validate checks a value to store or to compare with.
func (v AttrValue) validate(what string) error {
	switch v.kind {
	case AttrKindString:
		return check.TextMax(what, v.s, MaxAttrStringLen)
	case AttrKindInt, AttrKindBool:
		return nil
	case AttrKindTime:
		_, err := check.RequiredTime(what, v.Time())
		return err
	}
	return check.Invalidf("%s: no value (the zero AttrValue)", what)
}

// MarshalJSON encodes v as a one-member object naming its kind: {"s":"text"}, {"i":42},
// {"t":"2026-01-02T03:04:05.123456Z"} or {"b":true}.
// The zero AttrValue, which holds no value, does not encode.
func (v AttrValue) MarshalJSON() ([]byte, error) {
	return appendAttrValue(nil, v)
}

// UnmarshalJSON is the inverse of MarshalJSON.
func (v *AttrValue) UnmarshalJSON(b []byte) error {
	var m struct {
		S *string    `json:"s"`
		I *int64     `json:"i"`
		T *time.Time `json:"t"`
		B *bool      `json:"b"`
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&m); err != nil {
		return fmt.Errorf("stead: attribute value: %w", err)
	}
	switch {
	case m.S != nil && m.I == nil && m.T == nil && m.B == nil:
		*v = AttrString(*m.S)
	case m.I != nil && m.S == nil && m.T == nil && m.B == nil:
		*v = AttrInt(*m.I)
	case m.T != nil && m.S == nil && m.I == nil && m.B == nil:
		*v = AttrTime(*m.T)
	case m.B != nil && m.S == nil && m.I == nil && m.T == nil:
		*v = AttrBool(*m.B)
	default:
		return fmt.Errorf("stead: attribute value %s: want exactly one of s, i, t, b", b)
	}
	return nil
}

// appendAttrValue writes v as MarshalJSON does (v is valid).
func appendAttrValue(b []byte, v AttrValue) ([]byte, error) {
	switch v.kind {
	case AttrKindString:
		b = append(b, `{"s":`...)
		b = appendString(b, v.s)
	case AttrKindInt:
		b = append(b, `{"i":`...)
		b = strconv.AppendInt(b, v.n, 10)
	case AttrKindTime:
		b = append(b, `{"t":"`...)
		var err error
		if b, err = v.Time().AppendText(b); err != nil {
			return nil, err
		}
		b = append(b, '"')
	case AttrKindBool:
		b = append(b, `{"b":`...)
		b = strconv.AppendBool(b, v.n != 0)
	default:
		return nil, fmt.Errorf("attribute value of no kind")
	}
	return append(b, '}'), nil
}

// appendAttributes writes an execution's attributes as its ,"attributes" member, or nothing when
// there are none.
func appendAttributes(b []byte, attrs map[string]AttrValue) ([]byte, error) {
	if len(attrs) == 0 {
		return b, nil
	}
	b = append(b, `,"attributes":{`...)
	for i, k := range sortedKeys(attrs) {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		var err error
		if b, err = appendAttrValue(b, attrs[k]); err != nil {
			return nil, fmt.Errorf("attribute %q: %w", k, err)
		}
	}
	return append(b, '}'), nil
}

// CheckAttrKey checks an attribute key: 1 to MaxAttrKeyLen bytes of ASCII letters, digits, '_',
// '.' and '-', starting with a letter or '_'. Keys are names, not data, so that they need no
// quoting in a filter (customer=42) and compare the same everywhere.
func CheckAttrKey(key string) error {
	if key == "" || len(key) > MaxAttrKeyLen {
		return check.Invalidf("attribute key %q: want 1 to %d bytes", key, MaxAttrKeyLen)
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_':
		case i > 0 && (c >= '0' && c <= '9' || c == '.' || c == '-'):
		default:
			return check.Invalidf("attribute key %q: byte %d (%q) is not a letter, digit, '_', '.' or '-' (a key starts with a letter or '_')", key, i, c)
		}
	}
	return nil
}

// CheckAttribute checks one attribute as a store checks it at create: the key as CheckAttrKey
// says and a value of some kind that a store keeps (the zero AttrValue, which deletes in
// Bundle.Attributes, is refused). It lets code that stages attributes for a later commit, such as
// an action through chart.ActionContext, refuse bad input where it is given.
func CheckAttribute(key string, v AttrValue) error {
	if err := CheckAttrKey(key); err != nil {
		return err
	}
	return v.validate("attribute " + key)
}

// checkAttributes checks an execution's attributes.
func checkAttributes(attrs map[string]AttrValue) error {
	if len(attrs) > MaxAttributes {
		return check.Invalidf("%d attributes, more than %d", len(attrs), MaxAttributes)
	}
	for k, v := range attrs {
		if err := CheckAttrKey(k); err != nil {
			return err
		}
		if err := v.validate("attribute " + k); err != nil {
			return err
		}
	}
	return nil
}

// applyAttributes returns attrs changed by the bundle's changes: a value sets its key, the zero
// AttrValue deletes it. It returns attrs itself when there are no changes, nil when nothing is
// left, and a new map otherwise.
func applyAttributes(attrs, changes map[string]AttrValue) (map[string]AttrValue, error) {
	if len(changes) == 0 {
		return attrs, nil
	}
	if len(changes) > 2*MaxAttributes {
		return nil, check.Invalidf("%d attribute changes in one commit, more than %d", len(changes), 2*MaxAttributes)
	}
	out := make(map[string]AttrValue, len(attrs)+len(changes))
	for k, v := range attrs {
		out[k] = v
	}
	for k, v := range changes {
		if err := CheckAttrKey(k); err != nil {
			return nil, err
		}
		if v.IsZero() {
			delete(out, k)
			continue
		}
		if err := v.validate("attribute " + k); err != nil {
			return nil, err
		}
		out[k] = v
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// AttrOp is the comparison of an attribute condition.
type AttrOp string

// The comparisons. Ranges (<, <=, >, >=) order strings byte-wise and integers and times
// numerically; they do not apply to booleans.
const (
	AttrEq AttrOp = "="
	AttrLt AttrOp = "<"
	AttrLe AttrOp = "<="
	AttrGt AttrOp = ">"
	AttrGe AttrOp = ">="
	// AttrIn keeps executions whose value is any of the condition's values (1 to MaxAttrIn, of
	// one kind).
	AttrIn AttrOp = "in"
)

// AttrFilter is one condition on an attribute: the execution carries Key with a value of the
// kind of Values that compares by Op with Values[0] (with any of Values, for AttrIn). An
// execution without the key, or with a value of another kind, does not match.
type AttrFilter struct {
	Key    string
	Op     AttrOp
	Values []AttrValue
}

// Where returns the condition key op values; Where("amount", AttrGt, AttrInt(100)).
func Where(key string, op AttrOp, values ...AttrValue) AttrFilter {
	return AttrFilter{Key: key, Op: op, Values: values}
}

// Matches reports whether attrs satisfy f.
func (f *AttrFilter) Matches(attrs map[string]AttrValue) bool {
	v, ok := attrs[f.Key]
	if !ok || len(f.Values) == 0 || v.kind != f.Values[0].kind {
		return false
	}
	c := v.Compare(f.Values[0])
	switch f.Op {
	case AttrEq:
		return c == 0
	case AttrLt:
		return c < 0
	case AttrLe:
		return c <= 0
	case AttrGt:
		return c > 0
	case AttrGe:
		return c >= 0
	case AttrIn:
		for _, w := range f.Values {
			if v.Compare(w) == 0 {
				return true
			}
		}
	}
	return false
}

// String writes f in ParseAttributeFilter's syntax.
func (f AttrFilter) String() string {
	var b []byte
	b = append(b, f.Key...)
	if f.Op == AttrIn {
		b = append(b, " in ("...)
		for i, v := range f.Values {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = appendFilterValue(b, v)
		}
		return string(append(b, ')'))
	}
	b = append(b, f.Op...)
	if len(f.Values) > 0 {
		b = appendFilterValue(b, f.Values[0])
	}
	return string(b)
}

func appendFilterValue(b []byte, v AttrValue) []byte {
	if v.kind == AttrKindString {
		return strconv.AppendQuote(b, v.s)
	}
	return append(b, v.String()...)
}

// checkAttrFilters checks a listing's attribute conditions and returns their normalised copy:
// sorted by key, op and values, the values of AttrIn sorted and distinct, so that two lists
// that select the same rows the same way have one form (and one cursor).
func checkAttrFilters(fs []AttrFilter) ([]AttrFilter, error) {
	if len(fs) == 0 {
		return nil, nil
	}
	if len(fs) > MaxAttributes {
		return nil, check.Invalidf("%d attribute conditions, more than %d", len(fs), MaxAttributes)
	}
	out := make([]AttrFilter, len(fs))
	for i, f := range fs {
		if err := CheckAttrKey(f.Key); err != nil {
			return nil, err
		}
		switch f.Op {
		case AttrEq, AttrLt, AttrLe, AttrGt, AttrGe:
			if len(f.Values) != 1 {
				return nil, check.Invalidf("attribute condition on %q: %s takes one value, not %d", f.Key, f.Op, len(f.Values))
			}
		case AttrIn:
			if len(f.Values) == 0 || len(f.Values) > MaxAttrIn {
				return nil, check.Invalidf("attribute condition on %q: in takes 1 to %d values, not %d", f.Key, MaxAttrIn, len(f.Values))
			}
		default:
			return nil, check.Invalidf("attribute condition on %q: unknown comparison %q", f.Key, f.Op)
		}
		kind := f.Values[0].kind
		for _, v := range f.Values {
			if err := v.validate("attribute condition on " + f.Key); err != nil {
				return nil, err
			}
			if v.kind != kind {
				return nil, check.Invalidf("attribute condition on %q mixes %s and %s values", f.Key, kind, v.kind)
			}
		}
		if kind == AttrKindBool && f.Op != AttrEq && f.Op != AttrIn {
			return nil, check.Invalidf("attribute condition on %q: a boolean has no order (%s)", f.Key, f.Op)
		}
		vs := slices.Clone(f.Values)
		if f.Op == AttrIn {
			slices.SortFunc(vs, AttrValue.Compare)
			vs = slices.CompactFunc(vs, func(a, b AttrValue) bool { return a.Compare(b) == 0 })
		}
		out[i] = AttrFilter{Key: f.Key, Op: f.Op, Values: vs}
	}
	slices.SortStableFunc(out, func(a, b AttrFilter) int {
		if c := cmp.Compare(a.Key, b.Key); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Op, b.Op); c != 0 {
			return c
		}
		return slices.CompareFunc(a.Values, b.Values, AttrValue.Compare)
	})
	return out, nil
}
