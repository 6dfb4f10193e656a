package blob

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Dir is a Store of files under a directory, one file per key: the key's
// parts (split at "/") are path-escaped into names that cannot climb out of
// the directory. Directories are made 0700 and files 0600; a Put writes a
// temporary file, syncs it and renames it into place, so a reader sees the
// whole object or none.
type Dir struct {
	root string
}

var _ Store = (*Dir)(nil)

// NewDir returns a Store under path. The directory (and its parents) is
// created at the first Put: a server that never archives leaves none.
func NewDir(path string) (*Dir, error) {
	if path == "" {
		return nil, errors.New("blob: empty directory path")
	}
	if info, err := os.Stat(path); err == nil && !info.IsDir() {
		return nil, fmt.Errorf("blob: %s is not a directory", path)
	}
	return &Dir{root: filepath.Clean(path)}, nil
}

// Put implements Store.
func (d *Dir) Put(ctx context.Context, key string, body []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	path, err := d.path(key)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := d.mkdirs(dir); err != nil {
		return fmt.Errorf("blob: put %s: %w", key, err)
	}
	if err := writeFileAtomic(dir, path, body); err != nil {
		return fmt.Errorf("blob: put %s: %w", key, err)
	}
	return nil
}

// Get implements Store.
func (d *Dir) Get(ctx context.Context, key string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	path, err := d.path(key)
	if err != nil {
		return nil, err
	}
	body, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("blob: get %s: %w", key, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("blob: get %s: %w", key, err)
	}
	return body, nil
}

// path maps key to a file under the root: each "/"-separated part becomes
// one path element, escaped so that it holds no separator and is never "."
// or "..".
func (d *Dir) path(key string) (string, error) {
	if key == "" {
		return "", errors.New("blob: empty key")
	}
	parts := strings.Split(key, "/")
	elems := make([]string, 0, len(parts)+1)
	elems = append(elems, d.root)
	for _, p := range parts {
		if p == "" {
			return "", fmt.Errorf("blob: key %q has an empty part", key)
		}
		elems = append(elems, escapeName(p))
	}
	return filepath.Join(elems...), nil
}

// mkdirs creates dir and its missing parents, 0700, syncing the parent of
// each one it creates so that the new entries are durable with the file
// written into them.
func (d *Dir) mkdirs(dir string) error {
	if info, err := os.Stat(dir); err == nil && info.IsDir() {
		return nil
	}
	parent := filepath.Dir(dir)
	if err := d.mkdirs(parent); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil
		}
		return err
	}
	return syncDir(parent)
}

// escapeName makes s a safe file name: bytes other than ASCII letters,
// digits, '-' and '_' become %XX, so "." and ".." (and anything with a
// separator) cannot appear; it is one-to-one.
func escapeName(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// writeFileAtomic writes body to path through a synced temporary file in
// dir renamed into place, then syncs dir so the rename is durable.
func writeFileAtomic(dir, path string, body []byte) error {
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(0o600); err != nil {
		return err
	}
	if _, err := tmp.Write(body); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	done = true
	return syncDir(dir)
}

// syncDir makes the directory's entries (a rename into it) durable.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// Check reports whether the directory is there, for health reports.
func (d *Dir) Check(ctx context.Context) error {
	info, err := os.Stat(d.root)
	if err != nil {
		return fmt.Errorf("blob: %w", err)
	}
	if !info.IsDir() {
		return fmt.Errorf("blob: %s is not a directory", d.root)
	}
	return nil
}

// String names the store: its directory.
func (d *Dir) String() string { return d.root }
