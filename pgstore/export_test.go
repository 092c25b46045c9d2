package pgstore

// Schema returns the schema the store's objects live in ("" for the search_path), for the
// package's external tests, which query those objects directly.
func (b *Backend) Schema() string { return b.schema }
