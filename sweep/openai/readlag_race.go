//go:build linux && race

package openai

import "syscall"

// raceAcquireIO gives the race detector the edge a read through the syscall package gives it
// (syscall.Read acquires the ioSync that every syscall.Write releases): net.Conn's reads have
// it, stampConn's recvmsg does not, and without it the detector would see the kernel's
// ordering of a peer's write before this read as none. A read of 0 bytes: nothing is consumed.
func raceAcquireIO(fd uintptr) { _, _ = syscall.Read(int(fd), nil) }
