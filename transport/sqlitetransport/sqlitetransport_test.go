package sqlitetransport_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/sqlitetransport"
	"github.com/steadhq/stead/transport/transporttest"
)

func open(t testing.TB, path string, opts ...sqlitetransport.Option) *sqlitetransport.Transport {
	t.Helper()
	tr, err := sqlitetransport.Open(context.Background(), path, opts...)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	return tr
}

func TestConformance(t *testing.T) {
	t.Parallel()
	transporttest.Run(t, func(t *testing.T, clock func() time.Time) transport.Transport {
		return open(t, filepath.Join(t.TempDir(), "transport.db"), sqlitetransport.WithClock(clock))
	})
}

func TestConformanceInMemory(t *testing.T) {
	t.Parallel()
	transporttest.Run(t, func(t *testing.T, clock func() time.Time) transport.Transport {
		return open(t, ":memory:", sqlitetransport.WithClock(clock))
	})
}
