package stead_test

import (
	"strings"
	"testing"

	"github.com/steadhq/stead"
)

// The version is semantic, without the tag's leading v, so that "v"+Version is the module's tag.
func TestVersionIsSemantic(t *testing.T) {
	t.Parallel()
	parts := strings.Split(stead.Version, ".")
	if len(parts) != 3 {
		t.Fatalf("stead.Version %q: want MAJOR.MINOR.PATCH", stead.Version)
	}
	for _, p := range parts {
		if p == "" || strings.Trim(p, "0123456789") != "" || (len(p) > 1 && p[0] == '0') {
			t.Fatalf("stead.Version %q: %q is not a version number", stead.Version, p)
		}
	}
}
