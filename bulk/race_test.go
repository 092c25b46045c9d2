//go:build race

package bulk_test

// raceEnabled: the tests run under the race detector, which sizes the slow ones down.
const raceEnabled = true
