package pgtransport_test

import (
	"testing"

	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/pgtransport"
	"github.com/steadhq/stead/transport/transporttest"
)

// go test -run '^$' -bench . -benchtime 2000x -count 5 ./transport/pgtransport/
func BenchmarkTransport(b *testing.B) {
	for _, v := range []struct {
		name string
		opts []pgtransport.Option
	}{
		{"notify", nil},
		{"nonotify", []pgtransport.Option{pgtransport.WithoutNotify()}},
	} {
		b.Run(v.name, func(b *testing.B) {
			transporttest.Benchmark(b, func(b *testing.B) *transport.Transport {
				return openOn(b, newPool(b, pgdb.Config{MaxConns: 8}), pgdbtest.Schema(b), v.opts...)
			})
		})
	}
}
