package benchutil

import (
	"fmt"
	"testing"
)

func TestMedian(t *testing.T) {
	tests := []struct {
		xs   []float64
		want float64
	}{
		{nil, 0}, {[]float64{3}, 3}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5},
	}
	for _, tt := range tests {
		in := append([]float64(nil), tt.xs...)
		if got := Median(in); got != tt.want {
			t.Errorf("Median(%v) = %v, want %v", tt.xs, got, tt.want)
		}
		for i := range in {
			if in[i] != tt.xs[i] {
				t.Fatalf("Median reordered its input: %v", in)
			}
		}
	}
}

func TestParsePgbench(t *testing.T) {
	const report = `transaction type: script.sql
scaling factor: 1
query mode: prepared
number of clients: 8
number of threads: 2
maximum number of tries: 1
duration: 8 s
number of transactions actually processed: 26290
number of failed transactions: %s (0.000%%)
latency average = 1.521 ms
initial connection time = 17.841 ms
tps = 5264.086337 (without initial connection time)
`
	tests := []struct {
		name    string
		out     string
		want    PgbenchResult
		wantErr bool
	}{
		{"report", fmt.Sprintf(report, "0"), PgbenchResult{TPS: 5264.086337, Transactions: 26290}, false},
		{"failed transactions", fmt.Sprintf(report, "3"), PgbenchResult{}, true},
		{"no report", "pgbench: error: connection refused", PgbenchResult{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParsePgbench(tc.out)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("ParsePgbench = %+v, %v; want %+v, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}
