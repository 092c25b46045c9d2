package pgtransport_test

import (
	"context"
	"testing"
	"time"

	"github.com/steadhq/stead/internal/pgtest"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/pgtransport"
	"github.com/steadhq/stead/transport/transporttest"
)

// open returns a transport on a fresh schema (dropped when the test ends), closed by the test.
func open(t testing.TB, schema string, opts ...pgtransport.Option) *pgtransport.Transport {
	t.Helper()
	tr, err := pgtransport.Open(context.Background(), pgtest.URL(),
		append([]pgtransport.Option{pgtransport.WithSchema(schema), pgtransport.WithMaxConns(4)}, opts...)...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return tr
}

func TestConformance(t *testing.T) {
	t.Parallel()
	transporttest.Run(t, func(t *testing.T, clock func() time.Time) transport.Transport {
		return open(t, pgtest.Schema(t), pgtransport.WithClock(clock))
	})
}
