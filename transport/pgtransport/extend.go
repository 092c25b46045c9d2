package pgtransport

import (
	"context"
	"time"

	"github.com/steadhq/stead/transport"
)

var _ transport.Extender = (*Backend)(nil)

// Extend implements transport.Extender in one statement and one round trip.
func (b *Backend) Extend(ctx context.Context, ls []transport.Lease, visibility time.Duration) (int, error) {
	groups := make([]string, len(ls))
	tokens := make([]string, len(ls))
	for i := range ls {
		groups[i], tokens[i] = ls[i].Group, ls[i].Token
	}
	tag, err := b.pool.Exec(ctx, b.st.Extend, groups, tokens, b.now().Add(visibility))
	if err != nil {
		return 0, fail("extend", err)
	}
	return int(tag.RowsAffected()), nil
}
