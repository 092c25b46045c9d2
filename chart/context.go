package chart

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/steadhq/stead"
)

// schema is a definition's compiled context declaration.
type schema struct {
	keys     map[string]*ContextKey
	defaults []*ContextKey // in declaration order
}

func compileSchema(keys []*ContextKey) *schema {
	if len(keys) == 0 {
		return nil
	}
	sc := &schema{keys: make(map[string]*ContextKey, len(keys))}
	for _, k := range keys {
		c := *k
		sc.keys[k.Name] = &c
		if len(k.Default) > 0 {
			sc.defaults = append(sc.defaults, &c)
		}
	}
	return sc
}

// typeOf names the JSON type of raw, telling integers from other numbers.
func typeOf(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	switch raw[0] {
	case '"':
		return TypeString
	case '{':
		return TypeObject
	case '[':
		return TypeList
	case 't', 'f':
		return TypeBoolean
	case 'n':
		return "null"
	}
	if _, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return TypeInteger
	}
	if f, err := strconv.ParseFloat(string(raw), 64); err == nil && f == math.Trunc(f) && !bytes.ContainsAny(raw, ".") {
		return TypeInteger // an exponent form of a whole number
	}
	return TypeNumber
}

// fits reports whether a value of JSON type got is a value of declared type want.
func fits(want, got string) bool {
	switch want {
	case TypeAny:
		return true
	case TypeNumber:
		return got == TypeNumber || got == TypeInteger
	}
	return want == got
}

// checkValue checks the value of one key against its declaration.
func (sc *schema) checkValue(key string, raw json.RawMessage) error {
	k, ok := sc.keys[key]
	if !ok {
		return fmt.Errorf("context key %q is not declared", key)
	}
	if got := typeOf(raw); !fits(k.Type, got) {
		return fmt.Errorf("context key %q is %s, not a %s", key, got, k.Type)
	}
	return nil
}

// prepare checks a whole context and sets the defaults of missing keys.
func (sc *schema) prepare(m map[string]json.RawMessage) error {
	for _, key := range sortedKeys(m) {
		if err := sc.checkValue(key, m[key]); err != nil {
			return err
		}
	}
	for _, k := range sc.defaults {
		if _, ok := m[k.Name]; !ok {
			m[k.Name] = k.Default
		}
	}
	for _, key := range sortedKeys(sc.keys) {
		if _, ok := m[key]; !ok && sc.keys[key].Required {
			return fmt.Errorf("context key %q is required", key)
		}
	}
	return nil
}

// PrepareContext checks a start context (a JSON object, or empty for none) against the
// definition's declared context keys and returns it with the defaults of missing keys set. A
// context that breaks the declaration is ErrInvalid. Without declared keys it returns ctx as it
// is. worker.Client calls it when it creates an execution, so that nothing is written for a bad
// context.
func (e *Engine) PrepareContext(ctx json.RawMessage) (json.RawMessage, error) {
	if e.schema == nil {
		return ctx, nil
	}
	m := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(ctx)) > 0 {
		if err := json.Unmarshal(ctx, &m); err != nil || m == nil {
			return nil, fmt.Errorf("chart: %w: context of definition %q is not a JSON object", stead.ErrInvalid, e.id)
		}
	}
	if err := e.schema.prepare(m); err != nil {
		return nil, fmt.Errorf("chart: %w: definition %q: %v", stead.ErrInvalid, e.id, err)
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("chart: %w: context of definition %q: %v", stead.ErrInvalid, e.id, err)
	}
	return raw, nil
}

func sortedKeys[V any](m map[string]V) []string {
	// Sorted, so that of several problems the same one is always reported.
	return slices.Sorted(maps.Keys(m))
}
