package turn

import (
	"crypto/rand"
	"database/sql/driver"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/steadhq/stead/internal/check"
)

// ID identifies a conversation, turn, interaction, command, event or outbox row. It is a UUID;
// the zero ID means "absent" and is refused wherever an identifier is required.
type ID [16]byte

// NewID returns a fresh version-7 UUID: the first 48 bits are the Unix time in milliseconds, so
// ids minted in sequence sort roughly by time and land near each other in a B-tree index.
func NewID() ID {
	var id ID
	_, _ = rand.Read(id[:]) // crypto/rand.Read never returns an error (it aborts the program instead)
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(time.Now().UnixMilli()))
	copy(id[:6], ms[2:])
	id[6] = id[6]&0x0f | 0x70
	id[8] = id[8]&0x3f | 0x80
	return id
}

// ParseID parses the canonical textual form xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx (either case).
// Anything else is an error wrapping ErrInvalid.
func ParseID(s string) (ID, error) {
	var id ID
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return id, check.Invalidf("malformed id %q", truncate(s))
	}
	hexPart := s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:36]
	if _, err := hex.Decode(id[:], []byte(hexPart)); err != nil {
		return ID{}, check.Invalidf("malformed id %q", truncate(s))
	}
	return id, nil
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// IsZero reports whether id is the zero (absent) id.
func (id ID) IsZero() bool { return id == ID{} }

// String returns the canonical lowercase textual form.
func (id ID) String() string {
	var b [36]byte
	hex.Encode(b[0:8], id[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], id[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], id[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], id[8:10])
	b[23] = '-'
	hex.Encode(b[24:36], id[10:16])
	return string(b[:])
}

// Compare orders ids bytewise, which is also the order PostgreSQL gives uuid columns.
func (id ID) Compare(other ID) int {
	for i := range id {
		if id[i] != other[i] {
			if id[i] < other[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

// MarshalText implements encoding.TextMarshaler (the canonical form).
func (id ID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (id *ID) UnmarshalText(b []byte) error {
	v, err := ParseID(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// Value implements driver.Valuer so an ID binds to a uuid parameter as its canonical text.
func (id ID) Value() (driver.Value, error) { return id.String(), nil }

// Scan implements sql.Scanner for uuid columns read as text or as 16 raw bytes.
func (id *ID) Scan(src any) error {
	switch v := src.(type) {
	case string:
		return id.UnmarshalText([]byte(v))
	case []byte:
		if len(v) == 16 {
			copy(id[:], v)
			return nil
		}
		return id.UnmarshalText(v)
	case [16]byte:
		*id = v
		return nil
	case nil:
		*id = ID{}
		return nil
	}
	return fmt.Errorf("turn: cannot scan %T into an ID", src)
}
