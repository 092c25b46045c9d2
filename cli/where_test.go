package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/cli/backend"
	"github.com/steadhq/stead/worker"
)

// TestWhere: --where selects by attributes, in inspect's listing and in a command's selection,
// and a malformed condition is a usage error.
func TestWhere(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := newStore(t, filepath.Join(t.TempDir(), "s.db"))
	b, err := backend.Open(ctx, db, backend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	client := &worker.Client{Store: b.Store, Transport: b.Transport}
	news := []worker.NewExecution{
		{DefinitionID: "order", ID: "o1", Attributes: map[string]stead.AttrValue{"customer": stead.AttrInt(42), "amount": stead.AttrInt(50)}},
		{DefinitionID: "order", ID: "o2", Attributes: map[string]stead.AttrValue{"customer": stead.AttrInt(42), "amount": stead.AttrInt(150)}},
		{DefinitionID: "order", ID: "o3", Attributes: map[string]stead.AttrValue{"customer": stead.AttrInt(7), "amount": stead.AttrInt(500)}},
	}
	if _, err := client.CreateBatch(ctx, news); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		where []string
		want  []string
	}{
		{"one condition", []string{"customer=42"}, []string{"o1", "o2"}},
		{"two conditions", []string{"customer=42", "amount>100"}, []string{"o2"}},
		{"a set", []string{"customer in (7, 9)"}, []string{"o3"}},
		{"a string is not an integer", []string{`customer="42"`}, nil},
	} {
		args := []string{"inspect", "--store", db}
		for _, w := range tc.where {
			args = append(args, "--where", w)
		}
		code, out, errOut := cli(t, ctx, args...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", tc.name, code, errOut)
		}
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
			got = append(got, strings.Fields(line)[0])
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%s: listed %v, want %v", tc.name, got, tc.want)
		}
	}
	// The executions were never started (no worker ran): the dry run matches o2 alone and
	// reports it refused as pending.
	_, out, errOut := cli(t, ctx, "suspend", "--store", db, "--where", "customer=42", "--where", "amount>100", "--dry-run")
	if !strings.Contains(out, "1 matched") || !strings.Contains(out, "refused o2") {
		t.Fatalf("suspend --where --dry-run: stdout %q, stderr %q; want o2 alone matched", out, errOut)
	}
	// start --attr sets them, typed as --where reads them.
	if code, _, errOut := cli(t, ctx, "start", "--store", db, "order", "--id", "o4", "--attr", "customer=42", "--attr", "amount=700",
		"--context", `{"order_id":"o4","amount":700,"outcome":"ok"}`); code != 0 {
		t.Fatalf("start --attr: exit %d: %s", code, errOut)
	}
	if _, out, _ := cli(t, ctx, "inspect", "--store", db, "--where", "customer=42", "--where", "amount>600"); !strings.Contains(out, "o4") {
		t.Fatalf("inspect after start --attr: %q, want o4", out)
	}
	if code, _, errOut := cli(t, ctx, "start", "--store", db, "order", "--attr", "amount>600"); code != 2 || !strings.Contains(errOut, "--attr") {
		t.Fatalf("start --attr amount>600: exit %d, stderr %q; want a usage error naming --attr", code, errOut)
	}
	if code, _, errOut := cli(t, ctx, "inspect", "--store", db, "--where", "customer>"); code != 2 || !strings.Contains(errOut, "--where") {
		t.Fatalf("malformed --where: exit %d, stderr %q; want a usage error naming --where", code, errOut)
	}
}
