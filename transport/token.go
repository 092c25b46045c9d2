package transport

import (
	"crypto/rand"
	"encoding/hex"
)

// NewToken returns a fresh lease token "<worker>:<32 hex digits>". The random part makes every
// claim's token unique, which is what fences a stale lease. Backends call it once per claim.
func NewToken(worker string) string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (it panics on a broken system)
	return worker + ":" + hex.EncodeToString(b[:])
}
