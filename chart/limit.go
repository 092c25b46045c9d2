package chart

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/steadhq/stead"
)

// Limit bounds how many executions of a definition run a step at once, and how often they may
// start one, per key: the executions that share a key share the limit. The worker enforces it in
// the transport's claim (transport.Flow), exactly across processes, so a limited execution's
// events wait unclaimed — holding no worker — while its key has no room.
//
// In YAML:
//
//	limit:
//	  key: context.customer_id   # or attribute.tenant; omitted: one limit for the whole definition
//	  concurrency: 2             # at most 2 executions of a key with a step in flight
//	  rate: 100                  # and at most 100 steps of a key started...
//	  per: 1m                    # ...in any minute
//
// A limit applies to executions a worker.Client creates (Create, Start, schedules, bulk starts)
// from their start to their end; region children and invoked machines are not limited. Every
// version of a definition shares its limit's keys, and the declaration a new execution is
// created with becomes its key's limits (the latest wins).
type Limit struct {
	// Key picks the key: "" for the definition itself (a global limit), "context.<name>" for
	// the value of a top-level context field, "attribute.<name>" for an execution attribute. An
	// execution without that field or attribute shares the key of the empty value.
	Key string
	// Concurrency is how many executions of a key may have a step in flight (0: no limit).
	Concurrency int
	// Rate is how many steps of a key may start in any Per (0: no limit).
	Rate int
	Per  time.Duration
	Pos  Pos
}

// Bounds of a Limit.
const (
	MaxLimitConcurrency = 1 << 20
	MaxLimitRate        = 1 << 30
	MaxLimitPer         = 7 * 24 * time.Hour
)

// maxFlowKey bounds the key a Limit makes; a longer value is replaced by its SHA-256.
const maxFlowKey = 512

// FlowKey is the key an execution of definition (its id without the version) with the given
// context and attributes is limited under: "<definition>" for a definition-wide limit,
// "<definition>/<name>=<value>" otherwise.
func (l *Limit) FlowKey(definition string, ctx json.RawMessage, attrs map[string]stead.AttrValue) string {
	base, _ := SplitVersion(definition)
	source, name, ok := strings.Cut(l.Key, ".")
	if !ok {
		return base
	}
	var value string
	switch source {
	case "context":
		var fields map[string]json.RawMessage
		if json.Unmarshal(ctx, &fields) == nil {
			if raw, ok := fields[name]; ok {
				var s string
				if json.Unmarshal(raw, &s) == nil {
					value = s
				} else if string(raw) != "null" {
					value = string(raw)
				}
			}
		}
	case "attribute":
		if v, ok := attrs[name]; ok {
			value = v.String()
		}
	}
	key := base + "/" + name + "=" + value
	if len(key) > maxFlowKey || strings.IndexByte(key, 0) >= 0 {
		sum := sha256.Sum256([]byte(value))
		key = base + "/" + name + "#" + hex.EncodeToString(sum[:])
	}
	return key
}

// check reports what is wrong with l in the definition v checks.
func (v *validator) checkLimit(l *Limit) {
	if l == nil {
		return
	}
	if l.Key != "" {
		source, name, ok := strings.Cut(l.Key, ".")
		switch {
		case !ok || (source != "context" && source != "attribute") || name == "":
			v.addf(l.Pos, "", "limit key %q must be context.<name> or attribute.<name> (or omitted for the whole definition)", l.Key)
		case source == "context" && len(v.def.Context) > 0 && !v.declared(name):
			v.addf(l.Pos, "", "limit key %q names a context key the definition does not declare", l.Key)
		case !validKind(name) || len(l.Key) > 200:
			v.addf(l.Pos, "", "limit key %q is not a valid name", l.Key)
		}
	}
	if l.Concurrency == 0 && l.Rate == 0 {
		v.addf(l.Pos, "", "limit sets neither concurrency nor rate")
	}
	if l.Concurrency < 0 || l.Concurrency > MaxLimitConcurrency {
		v.addf(l.Pos, "", "limit concurrency %d outside 0..%d", l.Concurrency, MaxLimitConcurrency)
	}
	if l.Rate < 0 || l.Rate > MaxLimitRate {
		v.addf(l.Pos, "", "limit rate %d outside 0..%d", l.Rate, MaxLimitRate)
	}
	switch {
	case l.Rate > 0 && (l.Per <= 0 || l.Per > MaxLimitPer):
		v.addf(l.Pos, "", "limit rate needs per: a period in (0, %s], not %s", MaxLimitPer, l.Per)
	case l.Rate == 0 && l.Per != 0:
		v.addf(l.Pos, "", "limit per %s without a rate", l.Per)
	case l.Per%time.Microsecond != 0:
		v.addf(l.Pos, "", "limit per %s is finer than a microsecond", l.Per)
	}
}

// declared reports whether the definition declares context key name.
func (v *validator) declared(name string) bool {
	for _, k := range v.def.Context {
		if k.Name == name {
			return true
		}
	}
	return false
}

// String is the limit as a line of text, for logs and the CLI.
func (l *Limit) String() string {
	var parts []string
	if l.Key == "" {
		parts = append(parts, "per definition")
	} else {
		parts = append(parts, "per "+l.Key)
	}
	if l.Concurrency > 0 {
		parts = append(parts, fmt.Sprintf("concurrency %d", l.Concurrency))
	}
	if l.Rate > 0 {
		parts = append(parts, fmt.Sprintf("rate %d per %s", l.Rate, l.Per))
	}
	return strings.Join(parts, ", ")
}
