package memturn

import (
	"fmt"

	"github.com/steadhq/stead/turn"
)

func notFound(what string, id turn.ID) error {
	return fmt.Errorf("%w: %s %s", turn.ErrNotFound, what, id)
}

func conflict(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{turn.ErrConflict}, args...)...)
}
