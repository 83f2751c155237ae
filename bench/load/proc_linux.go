//go:build linux

package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

// clockTick is the unit of utime and stime in /proc/PID/stat (USER_HZ, 100 on every Linux
// architecture Go supports).
const clockTick = 10 * time.Millisecond

// selfCPU returns the user + system CPU time of this process (getrusage RUSAGE_SELF).
func selfCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// threadCPU returns the user + system CPU time of the calling OS thread (getrusage
// RUSAGE_THREAD); the caller must be locked to its thread.
func threadCPU() (time.Duration, error) {
	const rusageThread = 1 // RUSAGE_THREAD, linux/resource.h
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0, fmt.Errorf("getrusage thread: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// vmRSS returns VmRSS of this process in bytes (/proc/self/status).
func vmRSS() (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("read status: %w", err)
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
			rss, err := kib(v)
			if err != nil {
				return 0, fmt.Errorf("parse status: %w", err)
			}
			return rss, nil
		}
	}
	return 0, errors.New("parse status: no VmRSS line")
}

// kib parses "   1234 kB\n" into bytes.
func kib(v []byte) (int64, error) {
	f := bytes.Fields(v)
	if len(f) != 2 || string(f[1]) != "kB" {
		return 0, fmt.Errorf("unexpected field %q", v)
	}
	n, err := strconv.ParseInt(string(f[0]), 10, 64)
	return n << 10, err
}

// procCPU returns the user + system CPU time of process pid (/proc/PID/stat fields 14, 15).
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("read stat: %w", err)
	}
	// The command name (field 2) may hold spaces; the fields after it follow its ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("parse stat: no ')' in %q", b)
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state), so field 14 (utime) is f[11] and field 15 (stime) f[12].
	if len(f) < 13 {
		return 0, fmt.Errorf("parse stat: %d fields", len(f))
	}
	u, err1 := strconv.ParseInt(string(f[11]), 10, 64)
	s, err2 := strconv.ParseInt(string(f[12]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("parse stat: utime %q stime %q", f[11], f[12])
	}
	return time.Duration(u+s) * clockTick, nil
}

// raiseFDLimit raises the soft RLIMIT_NOFILE to at least want (up to the hard limit) and
// returns the limit in force.
func raiseFDLimit(want uint64) (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("getrlimit: %w", err)
	}
	if lim.Cur >= want {
		return lim.Cur, nil
	}
	lim.Cur = min(want, lim.Max)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("setrlimit: %w", err)
	}
	return lim.Cur, nil
}
