package turntest_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/memturn"
	"github.com/steadhq/stead/turn/turntest"
)

// Outside `go test` (a CLI's self-check, a health endpoint of a custom backend), RunAll returns
// a report instead of failing a test.
func ExampleRunAll() {
	report := turntest.RunAll(context.Background(), func(context.Context) (turn.Stores, error) {
		return memturn.New(), nil // an empty set of stores per check
	})
	fmt.Println(strings.SplitN(report.String(), "\n", 2)[0])
	fmt.Println(report.Err())
	// Output:
	// 27 of 27 conformance checks passed
	// <nil>
}
