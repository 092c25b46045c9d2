package cli

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/steadhq/stead"
)

func TestVersion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		args    []string
		code    int
		stdout  string
		errPart string
	}{
		{"prints the library's version", []string{"version"}, 0, "stead " + stead.Version + " " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n", ""},
		{"refuses an argument", []string{"version", "extra"}, 2, "", "want no arguments"},
		{"refuses an unknown flag", []string{"version", "--short"}, 2, "", "unknown flag"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := cli(t, context.Background(), tc.args...)
			if code != tc.code || out != tc.stdout || !strings.Contains(errOut, tc.errPart) || (tc.errPart == "" && errOut != "") {
				t.Errorf("stead %s: exit %d (want %d), stdout %q (want %q), stderr %q (want %q)",
					strings.Join(tc.args, " "), code, tc.code, out, tc.stdout, errOut, tc.errPart)
			}
		})
	}
}
