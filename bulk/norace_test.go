//go:build !race

package bulk_test

const raceEnabled = false
