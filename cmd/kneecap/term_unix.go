//go:build unix

package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// fileColumns returns the width in columns of the terminal f is, or 0 when f is not one.
func fileColumns(f *os.File) int {
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}
