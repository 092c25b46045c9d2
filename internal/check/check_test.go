package check

import (
	"errors"
	"strings"
	"testing"

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
