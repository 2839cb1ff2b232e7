//go:build !linux

package main

import "errors"

// run refuses: the entry point drops privileges and replaces itself with
// the server the Linux way, and the image it belongs to is a Linux one.
func run([]string) error {
	return errors.New("runs only inside the Linux image idemcheck/mariadb")
}
