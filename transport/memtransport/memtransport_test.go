package memtransport_test

import (
	"testing"
	"time"

	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/memtransport"
	"github.com/steadhq/stead/transport/transporttest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	transporttest.Run(t, func(t *testing.T, clock func() time.Time) transport.Transport {
		return memtransport.New(memtransport.WithClock(clock))
	})
}
