package main

import "testing"

func TestInline(t *testing.T) {
	tests := []struct {
		q    string
		args []any
		want string
	}{
		{`SELECT ?, ?`, []any{"a", int64(2)}, `SELECT 'a', 2`},
		{`WHERE id = ?1 AND (d <> ?2 OR s <> ?3) OR d = ?2`, []any{"e", "o'k", "r"}, `WHERE id = 'e' AND (d <> 'o''k' OR s <> 'r') OR d = 'o''k'`},
		{`VALUES (?2, ?, ?1)`, []any{nil, []byte{0xab, 1}, "x"}, `VALUES (X'ab01', 'x', NULL)`}, // ? after ?2 is ?3
	}
	for _, tt := range tests {
		got, err := inline(tt.q, tt.args)
		if err != nil || got != tt.want {
			t.Errorf("inline(%q) = %q, %v; want %q", tt.q, got, err, tt.want)
		}
	}
	if _, err := inline(`SELECT ?3`, []any{"a"}); err == nil {
		t.Error("inline of a parameter past the arguments succeeded")
	}
	// Every statement of a state-only commit inlines with the arguments the loops bind.
	for name, args := range map[string][]any{
		"sqlCommitUpdate":    updateArgs(1, []byte("{}")),
		"sqlCommitIndexed":   indexedArgs(),
		"sqlCommitProcessed": processedArgs(0),
	} {
		if _, err := inline(stmt(name), args); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
