package termtest

import (
	"fmt"
	"io"
	"os"
	"syscall"
	"testing"
	"unsafe"
)

// PTY opens a pseudo-terminal: tty is the terminal end, for a command's
// standard error (render.IsTerminal says it is one); read is everything
// written to it, to call once the command has finished. Both ends are
// closed when the test ends.
func PTY(t testing.TB) (tty *os.File, read func() string) {
	t.Helper()
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	var n uint32
	err = control(ptm, func(fd uintptr) error {
		var unlock int32
		if err := ioctl(fd, syscall.TIOCSPTLCK, unsafe.Pointer(&unlock)); err != nil {
			return fmt.Errorf("unlock: %w", err)
		}
		if err := ioctl(fd, syscall.TIOCGPTN, unsafe.Pointer(&n)); err != nil {
			return fmt.Errorf("number: %w", err)
		}
		return nil
	})
	if err != nil {
		ptm.Close()
		t.Fatalf("pseudo-terminal: %v", err)
	}
	pts, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		ptm.Close()
		t.Fatalf("pseudo-terminal: %v", err)
	}
	// The terminal's buffer is small: what is written is drained as it
	// comes, so that a writer never blocks on it.
	got := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(ptm) // ends with EIO once the terminal end is closed
		got <- string(b)
	}()
	t.Cleanup(func() { pts.Close(); ptm.Close() })
	return pts, func() string {
		pts.Close()
		return <-got
	}
}

func control(f *os.File, fn func(fd uintptr) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(fd) }); err != nil {
		return err
	}
	return ferr
}

func ioctl(fd, req uintptr, arg unsafe.Pointer) error {
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, req, uintptr(arg)); e != 0 {
		return e
	}
	return nil
}
