package outfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A file is written whole, as an ordinary file, or, when its write fails,
// not at all: what was there stays, and no temporary file is left beside it.
func TestWriteAtomicIsWholeOrNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "report.json")
	require.NoError(t, WriteAtomic(path, func(w io.Writer) error { _, err := io.WriteString(w, "first"); return err }))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "first", string(b))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm())

	boom := errors.New("boom")
	err = WriteAtomic(path, func(w io.Writer) error { io.WriteString(w, "half"); return boom })
	require.ErrorIs(t, err, boom)
	assert.Contains(t, err.Error(), path)
	b, err = os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "first", string(b), "a failed write leaves the old file")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file left behind")
}

// A device is written in place (a rename would replace the device), and a
// folder is refused, naming the path.
func TestCreateWritesADeviceInPlaceAndRefusesAFolder(t *testing.T) {
	require.NoError(t, WriteAtomic(os.DevNull, func(w io.Writer) error { _, err := io.WriteString(w, "x"); return err }))
	fi, err := os.Stat(os.DevNull)
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&os.ModeDevice, "%s is still a device", os.DevNull)

	dir := t.TempDir()
	_, err = Create(dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), dir)
	assert.Contains(t, err.Error(), "is a folder")
}
