package cli

import (
	"io"
	"os"
)

// isTerminal reports whether w is a terminal, where a progress line may redraw itself.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
