package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRun runs the whole program on a fresh SQLite file: the crane is rejected, the laptop is
// ordered on the supplier's second call (its first answered 503 and was retried) and received
// once delivered, and the worker reports both finishes.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, &out, filepath.Join(t.TempDir(), "stead.db")); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"crane-1: done/rejected\n",
		"laptop-1: ordered as PO-1 after 2 calls to the supplier\n",
		"laptop-1: done/success\n",
		"finished: crane-1 done/rejected\n",
		"finished: laptop-1 done/success\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
