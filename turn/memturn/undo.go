package memturn

// undo records how to reverse each mutation of a bundle. Rolling back runs the entries newest
// first, so when an entity was touched twice its oldest snapshot is the one that remains. A nil
// *undo (a standalone call) records nothing.
type undo struct{ steps []func() }

func (u *undo) add(f func()) {
	if u != nil {
		u.steps = append(u.steps, f)
	}
}

func (u *undo) rollback() {
	for i := len(u.steps) - 1; i >= 0; i-- {
		u.steps[i]()
	}
	u.steps = nil
}
