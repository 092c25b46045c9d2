package pgturn

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/steadhq/stead/internal/errs"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		c    Config
		ok   bool
	}{
		{"zero takes defaults", Config{}, true},
		{"explicit", Config{MaxConns: 4, MinIdleConns: 2, AcquireTimeout: time.Second, StatementTimeout: 3 * time.Second, Schema: "turns"}, true},
		{"no idle connections", Config{MinIdleConns: -1}, true},
		{"negative max", Config{MaxConns: -1}, false},
		{"idle above max", Config{MaxConns: 2, MinIdleConns: 3}, false},
		{"negative acquire timeout", Config{AcquireTimeout: -time.Second}, false},
		{"negative statement timeout", Config{StatementTimeout: -time.Second}, false},
		{"sub-millisecond statement timeout", Config{StatementTimeout: time.Microsecond}, false},
		{"negative connect attempts", Config{ConnectAttempts: -1}, false},
		{"schema with a quote", Config{Schema: `turns"; DROP TABLE x; --`}, false},
		{"schema starting with a digit", Config{Schema: "1turns"}, false},
		{"schema too long", Config{Schema: strings.Repeat("s", 64)}, false},
		{"system schema", Config{Schema: "pg_catalog"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.c.Validate()
			if tt.ok && err != nil {
				t.Fatalf("Validate() = %v, want nil", err)
			}
			if !tt.ok && !errors.Is(err, errs.Invalid) {
				t.Fatalf("Validate() = %v, want ErrInvalid", err)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	pc := Config{}.poolConfig()
	if pc.MaxConns != DefaultMaxConns || pc.MinIdleConns != DefaultMinIdleConns ||
		pc.MaxConnIdleTime != DefaultMaxConnIdleTime || pc.MaxConnLifetime != DefaultMaxConnLifetime ||
		pc.StatementTimeout != 0 {
		t.Fatalf("defaults = %+v", pc)
	}
	if got := (Config{}).acquireTimeout(); got != DefaultAcquireTimeout {
		t.Fatalf("acquire timeout = %s", got)
	}
	never := Config{MaxConnIdleTime: -1, MaxConnLifetime: -1}.poolConfig()
	if never.MaxConnIdleTime < 50*365*24*time.Hour || never.MaxConnLifetime < 50*365*24*time.Hour {
		t.Fatalf("negative durations should mean never: %+v", never)
	}
	if got, want := (Config{MaxConns: 4, Schema: "turns"}).String(), "pool 1..4, schema turns"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
}
