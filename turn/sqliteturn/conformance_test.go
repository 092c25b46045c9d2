package sqliteturn_test

import (
	"context"
	"testing"

	"github.com/steadhq/stead/sqlitedb"
	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/turntest"
)

// The whole contract, each check on a file of its own.
func TestConformance(t *testing.T) {
	t.Parallel()
	turntest.Run(t, func(context.Context) (turn.Stores, error) {
		s, _ := newStore(t)
		return s, nil
	}, turntest.Parallel())
}

// One file for every check, as a shared deployment would be: the checks isolate themselves by
// account, id and outbox destination.
func TestConformanceSharedFile(t *testing.T) {
	t.Parallel()
	shared, _ := newStore(t)
	turntest.Run(t, func(context.Context) (turn.Stores, error) { return shared, nil })
}

// The contract on an in-memory database, which has no WAL: reads and writes exclude each other,
// which costs throughput and changes no answer.
func TestConformanceInMemory(t *testing.T) {
	t.Parallel()
	turntest.Run(t, func(context.Context) (turn.Stores, error) {
		return storeOn(t, openDB(t, sqlitedb.Memory)), nil
	}, turntest.Parallel())
}

// The suite's extra checks: bad input, racing admissions, and the stream paged while writers
// append concurrently.
func TestConformanceExtra(t *testing.T) {
	t.Parallel()
	turntest.RunExtra(t, func(context.Context) (turn.Stores, error) {
		s, _ := newStore(t)
		return s, nil
	}, turntest.Parallel())
}
