package memturn_test

import (
	"context"
	"testing"
	"time"

	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/memturn"
	"github.com/steadhq/stead/turn/turntest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	turntest.Run(t, func(context.Context) (turn.Stores, error) {
		return memturn.New(), nil
	}, turntest.Parallel())
}

func TestConformanceSharedStore(t *testing.T) {
	t.Parallel()
	// One store for every check, as a shared database would be: the checks must isolate
	// themselves by account, id and outbox destination.
	shared := memturn.New()
	turntest.Run(t, func(context.Context) (turn.Stores, error) { return shared, nil })
}

func TestReportIsDeterministicOnAStoppedClock(t *testing.T) {
	t.Parallel()
	run := func() string {
		clock := memturn.NewManualClock(time.Unix(0, 0))
		return turntest.RunAll(t.Context(), func(context.Context) (turn.Stores, error) {
			return memturn.New(memturn.WithClock(clock.Now)), nil
		}).String()
	}
	first, second := run(), run()
	if first != second {
		t.Fatalf("two runs differ:\n%s\n%s", first, second)
	}
	if want := "27 of 27 conformance checks passed"; first[:len(want)] != want {
		t.Fatalf("report:\n%s", first)
	}
}

func TestExtraChecks(t *testing.T) {
	t.Parallel()
	turntest.RunExtra(t, func(context.Context) (turn.Stores, error) { return memturn.New(), nil }, turntest.Parallel())
}
