package memtransport_test

import (
	"testing"

	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/memtransport"
	"github.com/steadhq/stead/transport/transporttest"
)

func BenchmarkTransport(b *testing.B) {
	transporttest.Benchmark(b, func(b *testing.B) *transport.Transport { return memtransport.New() })
}
