package migration

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"testing/fstest"
)

// ReleasedFile is the file beside a component's migrations that records every migration a
// release shipped, one line each in release order:
//
//	v0.1.0 001_init.sql 5d41402abc4b2a76b9719d911017c592...
//
// the release, the file and the SHA-256 of its contents. A release appends the lines of the
// migrations it adds; no line is ever edited, and neither is the file it names: a database that
// applied a released migration never applies it again, so an edit would reach only new databases.
// CheckFrozen holds the files to it.
const ReleasedFile = "released.txt"

// Released is one line of ReleasedFile.
type Released struct {
	Release string // the release that first shipped the file, e.g. "v0.1.0"
	File    string // the migration's file name, e.g. "001_init.sql"
	SHA256  string // hex
}

// ReadReleased reads dir/ReleasedFile of fsys. Blank lines and lines starting with # are
// comments.
func ReadReleased(fsys fs.FS, dir string) ([]Released, error) {
	b, err := fs.ReadFile(fsys, path.Join(dir, ReleasedFile))
	if err != nil {
		return nil, err
	}
	var rs []Released
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 || !strings.HasPrefix(f[0], "v") || len(f[2]) != 2*sha256.Size {
			return nil, fmt.Errorf("%s line %d: want <release> <file> <sha256>", path.Join(dir, ReleasedFile), n)
		}
		rs = append(rs, Released{Release: f[0], File: f[1], SHA256: f[2]})
	}
	return rs, sc.Err()
}

// Sum returns the hex SHA-256 of a migration's contents, as ReleasedFile records it.
func Sum(sql []byte) string {
	s := sha256.Sum256(sql)
	return hex.EncodeToString(s[:])
}

// CheckFrozen checks the migrations in dir of fsys against its ReleasedFile: every released file
// is there, unchanged, and the released files come first, in the order they were released, so
// that every migration not yet released sorts after them. It reports every difference at once.
func CheckFrozen(fsys fs.FS, dir string) error {
	rs, err := ReadReleased(fsys, dir)
	if err != nil {
		return err
	}
	ms, err := Load(fsys, dir)
	if err != nil {
		return err
	}
	var errs []error
	for i, r := range rs {
		b, err := fs.ReadFile(fsys, path.Join(dir, r.File))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			errs = append(errs, fmt.Errorf("%s, released in %s, is gone", r.File, r.Release))
			continue
		case err != nil:
			errs = append(errs, err)
			continue
		}
		if got := Sum(b); got != r.SHA256 {
			errs = append(errs, fmt.Errorf("%s, released in %s, changed (sha256 %s, released %s): add a new migration instead", r.File, r.Release, got, r.SHA256))
		}
		if i >= len(ms) || fileOf(ms[i]) != r.File {
			errs = append(errs, fmt.Errorf("%s, released in %s, is not migration %d in order: a new migration must sort after every released one", r.File, r.Release, i+1))
		}
	}
	return errors.Join(errs...)
}

// AsOf returns the migrations in dir of fsys that had been released when release shipped, at
// the root of the returned file system (as pgdb.Migrate and sqlitedb.Migrate read them): the
// schema a database made by that release has. Upgrade tests start from it.
func AsOf(fsys fs.FS, dir, release string) (fs.FS, error) {
	rs, err := ReadReleased(fsys, dir)
	if err != nil {
		return nil, err
	}
	last := -1
	for i, r := range rs {
		if r.Release == release {
			last = i
		}
	}
	if last < 0 {
		return nil, fmt.Errorf("%s: no migration released in %s", path.Join(dir, ReleasedFile), release)
	}
	out := fstest.MapFS{}
	for _, r := range rs[:last+1] {
		b, err := fs.ReadFile(fsys, path.Join(dir, r.File))
		if err != nil {
			return nil, err
		}
		out[r.File] = &fstest.MapFile{Data: b}
	}
	return out, nil
}

func fileOf(m Migration) string { return fmt.Sprintf("%03d_%s.sql", m.Version, m.Name) }
