package snapshot

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// MaxFileBytes bounds what LoadFile reads: room for about 180,000 keys of
// canonical JSON (368 bytes a key), so the file mode holds the 50,000 keys
// the Kubernetes mode is built for with room to spare, while a file far
// larger is a mistake, not a configuration.
const MaxFileBytes = 64 << 20

// LoadFile reads and parses a snapshot file (see Parse).
func LoadFile(path string) (*Snapshot, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	s, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// ReadFile reads a snapshot file within MaxFileBytes without parsing it.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// A regular file too large is refused before it is read; anything else
	// (a pipe) is read up to the limit.
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > MaxFileBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, MaxFileBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, MaxFileBytes)
	}
	return data, nil
}

// WriteFile encodes s (see Encode, which sets s.Version) and replaces path
// atomically: a watcher or a concurrent reader sees the old file or the new one,
// never a torn write.
func WriteFile(path string, s *Snapshot) error {
	data, err := Encode(s)
	if err != nil {
		return err
	}
	return writeAtomic(path, data, 0o644)
}

func writeAtomic(path string, data []byte, mode os.FileMode) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return err
	}
	if err = tmp.Chmod(mode); err != nil {
		return err
	}
	// Sync before rename so a crash cannot leave the new name pointing at empty data.
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
