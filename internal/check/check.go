// Package check validates the strings and JSON documents that cross a store boundary, so that
// bad input is refused with an error wrapping errs.Invalid before any backend sees it.
package check

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/steadhq/stead/internal/errs"
)

// MaxIDLen bounds every identifier (execution ids, event ids, kinds, paths) in bytes.
const MaxIDLen = 512

// MaxPayload bounds every JSON document (a context, event data, a trace step) in bytes.
const MaxPayload = 1 << 20

// Invalidf returns an error wrapping errs.Invalid.
func Invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errs.Invalid}, args...)...)
}

// ID checks a required identifier.
func ID(field, v string) error {
	if v == "" {
		return Invalidf("%s is empty", field)
	}
	return Text(field, v)
}

// DefaultLimit is what a limit of 0 resolves to, and MaxLimit the largest limit a checked front
// accepts, in every contract (a page, a claim, a batch): see Limit.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// MaxMessageLen bounds free text such as a recorded error message.
const MaxMessageLen = 16 << 10

// Text checks an optional string: it may be empty, but when set it must be valid UTF-8 without
// NUL bytes (PostgreSQL text cannot hold NUL) and no longer than MaxIDLen.
func Text(field, v string) error { return TextMax(field, v, MaxIDLen) }

// TextMax is Text with another length bound.
func TextMax(field, v string, max int) error {
	if len(v) > max {
		return Invalidf("%s is %d bytes, more than %d", field, len(v), max)
	}
	if !utf8.ValidString(v) {
		return Invalidf("%s is not valid UTF-8", field)
	}
	if strings.IndexByte(v, 0) >= 0 {
		return Invalidf("%s contains a NUL byte", field)
	}
	return nil
}

// JSON checks an optional JSON document: empty is allowed; otherwise it must be valid UTF-8, valid
// JSON, at most MaxPayload bytes, and hold nothing PostgreSQL's jsonb refuses (no \u0000 escape,
// no lone surrogate escape, no number its numeric type cannot hold: see jsonbProblem), so that
// every backend refuses the same documents.
func JSON(field string, raw []byte) error {
	if len(raw) == 0 {
		return nil
	}
	if len(raw) > MaxPayload {
		return Invalidf("%s is %d bytes, more than %d", field, len(raw), MaxPayload)
	}
	if !utf8.Valid(raw) {
		return Invalidf("%s is not valid UTF-8", field)
	}
	if !json.Valid(raw) {
		return Invalidf("%s is not valid JSON", field)
	}
	if problem := jsonbProblem(raw); problem != "" {
		return Invalidf("%s %s", field, problem)
	}
	return nil
}

// JSONObject is JSON that, when present, must be an object.
func JSONObject(field string, raw []byte) error {
	if err := JSON(field, raw); err != nil {
		return err
	}
	if len(raw) == 0 {
		return nil
	}
	if t := bytes.TrimLeft(raw, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return Invalidf("%s is not a JSON object", field)
	}
	return nil
}

// Limit checks a page or batch size: negative or above max is invalid, zero takes def.
func Limit(field string, v, def, max int) (int, error) {
	switch {
	case v < 0:
		return 0, Invalidf("%s is negative (%d)", field, v)
	case v > max:
		return 0, Invalidf("%s is %d, more than %d", field, v, max)
	case v == 0:
		return def, nil
	}
	return v, nil
}

// MinTime and MaxTime bound every time a store keeps: the range every backend stores exactly
// (JSON's RFC 3339 years 0000-9999, PostgreSQL's timestamptz, SQLite's integer microseconds),
// less year 0, which Go's zero time would be confused with.
var (
	MinTime = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	MaxTime = time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)
)

// Time checks an optional time and returns it as every backend stores it: in UTC, truncated to
// microseconds. The zero time stays zero. A time outside [MinTime, MaxTime] once in UTC is invalid,
// so no offset can carry a time past the check.
func Time(field string, t time.Time) (time.Time, error) {
	if t.IsZero() {
		return time.Time{}, nil
	}
	u := t.UTC().Truncate(time.Microsecond) // what every backend stores, so what is checked
	if u.Before(MinTime) || u.After(MaxTime) {
		return time.Time{}, Invalidf("%s %s is outside the years 1 to 9999", field, t.Format(time.RFC3339Nano))
	}
	return u, nil
}

// RequiredTime is Time for a time that must be set.
func RequiredTime(field string, t time.Time) (time.Time, error) {
	if t.IsZero() {
		return time.Time{}, Invalidf("%s is the zero time", field)
	}
	return Time(field, t)
}
