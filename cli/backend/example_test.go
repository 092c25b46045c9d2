package backend_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/cli/backend"
)

// A command of one's own opens what --store names: here a new SQLite file.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "stead-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	b, err := backend.Open(ctx, filepath.Join(dir, "app.db"), backend.Options{}) // or a postgres:// URL
	if err != nil {
		panic(err)
	}
	defer b.Close()
	n, err := b.Store.Count(ctx, stead.ListFilter{})
	if err != nil {
		panic(err)
	}
	fmt.Println(b.Kind, n.Total)
	// Output: sqlite 0
}
