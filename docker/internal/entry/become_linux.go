package entry

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"syscall"
)

// Become hands dirs (created where missing, with mode) to the user name
// and switches this process to it. Since Go 1.16 the set*id calls apply to
// every thread, so the children and the exec that follow all run as that
// user.
func Become(name string, mode os.FileMode, dirs ...string) error {
	u, err := user.Lookup(name)
	if err != nil {
		return fmt.Errorf("the image has no %s user: %w", name, err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("%s user: %w", name, err)
	}
	for _, dir := range dirs {
		if err := os.MkdirAll(dir, mode); err != nil {
			return err
		}
		if err := os.Chown(dir, uid, gid); err != nil {
			return err
		}
		// A folder that was there already keeps its mode otherwise (initdb
		// insists on a private data folder).
		if err := os.Chmod(dir, mode); err != nil {
			return err
		}
	}
	if err := syscall.Setgroups(nil); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	if err := syscall.Setgid(gid); err != nil {
		return fmt.Errorf("setgid: %w", err)
	}
	if err := syscall.Setuid(uid); err != nil {
		return fmt.Errorf("setuid: %w", err)
	}
	return nil
}

// Exec replaces this process with args, found on PATH, in this process's
// environment: a command that does not start the server.
func Exec(args []string) error {
	path, err := exec.LookPath(args[0])
	if err != nil {
		return err
	}
	return syscall.Exec(path, args, os.Environ())
}
