package sqlitetransport_test

import (
	"path/filepath"
	"testing"

	"github.com/steadhq/stead/sqlitedb"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/transporttest"
)

// go test -run '^$' -bench . -benchtime 2000x -count 5 ./transport/sqlitetransport/
func BenchmarkTransport(b *testing.B) {
	for _, v := range []struct {
		name string
		sync sqlitedb.Synchronous
	}{
		{"normal", sqlitedb.SyncNormal},
		{"full", sqlitedb.SyncFull},
	} {
		b.Run(v.name, func(b *testing.B) {
			transporttest.Benchmark(b, func(b *testing.B) *transport.Transport {
				return newOn(b, openDB(b, filepath.Join(b.TempDir(), "bench.db"), sqlitedb.Config{Synchronous: v.sync}))
			})
		})
	}
}
