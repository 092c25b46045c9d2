package pgturn_test

import (
	"context"
	"testing"

	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/turntest"
)

// The whole contract, each check on an empty schema of its own.
func TestConformance(t *testing.T) {
	t.Parallel()
	turntest.Run(t, func(ctx context.Context) (turn.Stores, error) {
		return newStore(t).Stores, nil
	}, turntest.Parallel())
}

// The suite's extra checks: bad input, racing admissions, and the stream paged while writers
// append concurrently (including two writers on one account, where a later sequence could
// otherwise commit first and be passed over).
func TestConformanceExtra(t *testing.T) {
	t.Parallel()
	turntest.RunExtra(t, func(ctx context.Context) (turn.Stores, error) {
		return newStore(t).Stores, nil
	}, turntest.Parallel())
}
