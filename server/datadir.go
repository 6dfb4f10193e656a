package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// LockFile is the name of the data directory's lock file.
const LockFile = "imserver.lock"

// ErrDataDirInUse is returned by LockDataDir when another process holds the
// directory.
var ErrDataDirInUse = errors.New("data directory in use")

// LockDataDir takes the data directory's lock, so that one server (or one
// restore) at a time uses it, and returns its release. The lock is the
// kernel's (flock): a process that dies, even by SIGKILL, releases it.
func LockDataDir(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: another imserver is using %s (it holds %s); stop it first", ErrDataDirInUse, dir, path)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}
