package handover

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// keySize is the length of a key this plugin makes; a key file must hold
// at least this much, and only that much is read.
const keySize = 32

var (
	// errKeyPerm: a key others could read is no secret.
	errKeyPerm = errors.New("key file is not private to its owner (mode must be 0600 or stricter, owned by this process's user)")
	// errKeyShort: a short key is guessable.
	errKeyShort = errors.New("key file holds fewer than 32 bytes")
)

// loadKey reads the key shared by every instance of this program on the
// node, or makes it when nobody has yet: the first instance on the node
// writes 32 random bytes, and every later one (its successor) reads them.
// The directory is the operator's: it must exist, be writable by this
// user and by nobody else, so that only the program's own pods hold the
// key (in deploy/, a hostPath of the DaemonSet that an init container
// gives to the cache's own UID).
func loadKey(path string) ([]byte, error) {
	key, err := readKey(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	if err := createKey(path); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	// Made here or, in a race, by another instance: the file on disk wins.
	return readKey(path)
}

// readKey opens path without following a link, and refuses a file that
// is not a regular one private to this user.
func readKey(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("handover: key: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("handover: key: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 != 0 || !ok || int(st.Uid) != os.Geteuid() {
		return nil, fmt.Errorf("handover: %s: %w", path, errKeyPerm)
	}
	key := make([]byte, keySize)
	if _, err := io.ReadFull(f, key); err != nil {
		return nil, fmt.Errorf("handover: %s: %w", path, errKeyShort)
	}
	return key, nil
}

// createKey writes a new key beside path and links it in place: link(2)
// fails if path exists, so two instances starting at once agree on one
// key, and a reader never sees a half-written file.
func createKey(path string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".handover-key-*")
	if err != nil {
		return fmt.Errorf("handover: key: %w", err)
	}
	defer os.Remove(tmp.Name())
	key := make([]byte, keySize)
	if _, err := rand.Read(key); err != nil {
		tmp.Close()
		return fmt.Errorf("handover: key: %w", err)
	}
	_, werr := tmp.Write(key)
	if err := errors.Join(werr, tmp.Sync(), tmp.Close()); err != nil {
		return fmt.Errorf("handover: key: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		return fmt.Errorf("handover: key: %w", err)
	}
	return nil
}
