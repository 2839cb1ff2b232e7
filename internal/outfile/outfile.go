// Package outfile writes the files a user names (a report, a history, a
// page): whole or not at all, through a temporary file and a rename, and
// in place for a device or a pipe. Its errors name the path. It imports
// only the standard library.
package outfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// WriteAtomic writes a file through a temporary file in the same folder
// and a rename, so a reader never sees a half-written report and a failed
// run leaves none behind (see Create, which also says where a file is
// written in place). Its errors name the path.
func WriteAtomic(path string, write func(io.Writer) error) error {
	o, err := Create(path)
	if err != nil {
		return err
	}
	defer o.Abort()
	if err := write(o); err != nil {
		if o.Err() != nil {
			return o.Err()
		}
		return fmt.Errorf("write %s: %w", path, err)
	}
	return o.Commit()
}

// Output is a file being written: a report, a history. Its errors name
// the path.
type Output struct {
	f       *os.File
	path    string
	inPlace bool
	err     error
	done    bool
}

// Create opens path for writing. A regular file (or one not there
// yet) is written through a temporary file beside it, renamed into place
// by Commit, so a reader never sees a half-written one; a device, a pipe
// or another file that is not regular (/dev/stdout, /dev/full) is written
// in place, since a rename would replace the device itself, and its write
// errors are the caller's to report.
func Create(path string) (*Output, error) {
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		if fi.IsDir() {
			return nil, fmt.Errorf("write %s: is a folder: name a file", path)
		}
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return nil, fmt.Errorf("write %s: %w", path, unwrapPath(err))
		}
		return &Output{f: f, path: path, inPlace: true}, nil
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", path, unwrapPath(err))
	}
	return &Output{f: f, path: path}, nil
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Write writes to the file; the first error is kept, for Err and Commit.
func (o *Output) Write(p []byte) (int, error) {
	if o.err != nil {
		return 0, o.err
	}
	n, err := o.f.Write(p)
	if err != nil {
		o.err = fmt.Errorf("write %s: %w", o.path, unwrapPath(err))
		return n, o.err
	}
	return n, nil
}

// Err is the first write error, naming the path, or nil.
func (o *Output) Err() error { return o.err }

// Commit closes the file and puts it in place: the first write error, or
// the close's or rename's, if any, naming the path.
func (o *Output) Commit() error {
	if o.done {
		return o.err
	}
	o.done = true
	cerr := o.f.Close()
	if o.err == nil && cerr != nil {
		o.err = fmt.Errorf("write %s: %w", o.path, unwrapPath(cerr))
	}
	if o.inPlace {
		return o.err
	}
	if o.err == nil {
		// CreateTemp makes the file private; a report is an ordinary file.
		if err := os.Chmod(o.f.Name(), 0o644); err != nil {
			o.err = fmt.Errorf("write %s: %w", o.path, unwrapPath(err))
		} else if err := os.Rename(o.f.Name(), o.path); err != nil {
			o.err = fmt.Errorf("write %s: %w", o.path, unwrapPath(err))
		}
	}
	if o.err != nil {
		os.Remove(o.f.Name())
	}
	return o.err
}

// Abort drops a file not committed: the temporary file is removed. After
// Commit it does nothing.
func (o *Output) Abort() {
	if o.done {
		return
	}
	o.done = true
	o.f.Close()
	if !o.inPlace {
		os.Remove(o.f.Name())
	}
}
