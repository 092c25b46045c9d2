package turn

import (
	"testing"

	"github.com/steadhq/stead/internal/check"
)

// The limits are spelled out for readers of the public API; they must stay the checks' own.
func TestLimitsAreTheChecks(t *testing.T) {
	if MaxIDLen != check.MaxIDLen || MaxPayload != check.MaxPayload {
		t.Fatalf("MaxIDLen %d, MaxPayload %d; the checks enforce %d and %d", MaxIDLen, MaxPayload, check.MaxIDLen, check.MaxPayload)
	}
	if DefaultLimit != check.DefaultLimit || MaxLimit != check.MaxLimit {
		t.Fatalf("DefaultLimit %d, MaxLimit %d; the checks resolve to %d and refuse above %d", DefaultLimit, MaxLimit, check.DefaultLimit, check.MaxLimit)
	}
}
