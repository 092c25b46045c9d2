package cli

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
	"github.com/steadhq/stead"
)

// newVersion prints the version of the stead library the binary was built with, and the Go
// toolchain and platform that built it: the three facts a bug report needs first.
func newVersion(name string) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of stead this binary was built with",
		Long: `version prints the version of the stead library compiled into this binary (stead.Version),
then the Go version and the platform it was built for, on one line:

  ` + name + ` 0.1.0 go1.26.0 linux/amd64

CHANGELOG.md says what each version holds.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "%s %s %s %s/%s\n", name, stead.Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}
