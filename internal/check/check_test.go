package check

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/steadhq/stead/internal/check/jsonbtest"
	"github.com/steadhq/stead/internal/errs"
)

func TestID(t *testing.T) {
	tests := []struct {
		name string
		v    string
		ok   bool
	}{
		{"plain", "order-1", true},
		{"unicode", "commande-été", true},
		{"empty", "", false},
		{"nul", "a\x00b", false},
		{"invalid utf8", "a\xffb", false},
		{"at limit", strings.Repeat("x", MaxIDLen), true},
		{"too long", strings.Repeat("x", MaxIDLen+1), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ID("id", tt.v)
			if tt.ok && err != nil {
				t.Fatalf("ID(%q) = %v, want nil", tt.v, err)
			}
			if !tt.ok && !errors.Is(err, errs.Invalid) {
				t.Fatalf("ID(%q) = %v, want ErrInvalid", tt.v, err)
			}
		})
	}
}

func TestJSONObject(t *testing.T) {
	tests := []struct {
		name string
		v    string
		ok   bool
	}{
		{"empty means none", "", true},
		{"object", `{"a":1}`, true},
		{"object with space", " \n{}", true},
		{"array", `[1]`, false},
		{"scalar", `1`, false},
		{"broken", `{"a":`, false},
		{"nul escape", `{"a":"\u0000"}`, false},
		{"escaped backslash then u0000 text", `{"a":"\\u0000"}`, true},
		{"three backslashes", `{"a":"\\\u0000"}`, false},
		{"invalid utf8", "{\"a\":\"\xff\"}", false},
		{"oversized", `{"a":"` + strings.Repeat("x", MaxPayload) + `"}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := JSONObject("context", []byte(tt.v))
			if tt.ok && err != nil {
				t.Fatalf("JSONObject = %v, want nil", err)
			}
			if !tt.ok && !errors.Is(err, errs.Invalid) {
				t.Fatalf("JSONObject = %v, want ErrInvalid", err)
			}
		})
	}
}

func TestLimit(t *testing.T) {
	tests := []struct {
		v, want int
		ok      bool
	}{
		{0, 100, true}, {1, 1, true}, {1000, 1000, true}, {-1, 0, false}, {1001, 0, false},
	}
	for _, tt := range tests {
		got, err := Limit("limit", tt.v, 100, 1000)
		if tt.ok != (err == nil) || got != tt.want {
			t.Errorf("Limit(%d) = %d, %v; want %d, ok=%v", tt.v, got, err, tt.want, tt.ok)
		}
		if err != nil && !errors.Is(err, errs.Invalid) {
			t.Errorf("Limit(%d) error %v does not wrap ErrInvalid", tt.v, err)
		}
	}
}

func TestTime(t *testing.T) {
	est := time.FixedZone("EST", -5*3600)
	tests := []struct {
		name string
		in   time.Time
		want time.Time
		ok   bool
	}{
		{"zero stays zero", time.Time{}, time.Time{}, true},
		{"truncated to microseconds, in UTC", time.Date(2026, 1, 2, 3, 4, 5, 6789, est), time.Date(2026, 1, 2, 8, 4, 5, 6000, time.UTC), true},
		{"last instant", MaxTime, MaxTime, true},
		{"last nanosecond truncates to the last instant", MaxTime.Add(999), MaxTime, true},
		{"first instant after the zero time", MinTime.Add(time.Microsecond), MinTime.Add(time.Microsecond), true},
		{"an offset cannot carry a time past the end", time.Date(9999, 12, 31, 23, 0, 0, 0, est), time.Time{}, false},
		{"year 10000", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Time{}, false},
		{"year 300000", time.Date(300000, 1, 1, 0, 0, 0, 0, time.UTC), time.Time{}, false},
		{"before year 1", time.Date(0, 12, 31, 0, 0, 0, 0, time.UTC), time.Time{}, false},
		{"year 1 at +05:00 is year 0 in UTC", time.Date(1, 1, 1, 1, 0, 0, 0, time.FixedZone("", 5*3600)), time.Time{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Time("t", tt.in)
			if tt.ok != (err == nil) || (err != nil && !errors.Is(err, errs.Invalid)) {
				t.Fatalf("Time(%v) error = %v, want ok=%v", tt.in, err, tt.ok)
			}
			if !got.Equal(tt.want) || (!got.IsZero() && got.Location() != time.UTC) {
				t.Fatalf("Time(%v) = %v, want %v in UTC", tt.in, got, tt.want)
			}
		})
	}
	if _, err := RequiredTime("now", time.Time{}); !errors.Is(err, errs.Invalid) {
		t.Fatalf("RequiredTime(zero) = %v, want Invalid", err)
	}
}

// JSON refuses exactly what PostgreSQL's jsonb refuses beyond the grammar; turn/pgturn proves
// the same table against a live server.
func TestJSONRefusesWhatJSONBRefuses(t *testing.T) {
	for _, tt := range jsonbtest.Cases() {
		t.Run(tt.Name, func(t *testing.T) {
			err := JSON("doc", []byte(tt.Doc))
			if tt.Stored && err != nil {
				t.Fatalf("JSON = %v, want nil", err)
			}
			if !tt.Stored && !errors.Is(err, errs.Invalid) {
				t.Fatalf("JSON = %v, want ErrInvalid", err)
			}
		})
	}
}

func TestJSONEmptyIsAbsent(t *testing.T) {
	if err := JSON("doc", nil); err != nil {
		t.Fatalf("JSON(nil) = %v", err)
	}
	if err := JSON("doc", []byte(" ")); !errors.Is(err, errs.Invalid) {
		t.Fatalf("JSON(whitespace) = %v, want ErrInvalid", err)
	}
}
