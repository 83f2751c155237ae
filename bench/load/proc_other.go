//go:build !linux

package main

import (
	"errors"
	"time"
)

// errNoProc: the benchmark reads /proc and getrusage, which it only does on Linux.
var errNoProc = errors.New("load benchmark: needs Linux (/proc, getrusage)")

func selfCPU() (time.Duration, error)     { return 0, errNoProc }
func threadCPU() (time.Duration, error)   { return 0, errNoProc }
func vmRSS() (int64, error)               { return 0, errNoProc }
func procCPU(int) (time.Duration, error)  { return 0, errNoProc }
func raiseFDLimit(uint64) (uint64, error) { return 0, errNoProc }
