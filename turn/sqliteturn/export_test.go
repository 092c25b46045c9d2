package sqliteturn

// SetInTx makes b run fn inside every write transaction, before it commits or rolls back.
func SetInTx(b *Backend, fn func()) { b.inTx = fn }
