//go:build !unix

package main

import "os"

// fileColumns returns 0 where the terminal's width is not read: columns falls back to
// $COLUMNS, then 80.
func fileColumns(*os.File) int { return 0 }
