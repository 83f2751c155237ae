package main

// A sweep on an 80-column pseudo-terminal: what the terminal shows after processing the
// output (carriage returns, erase-line) has no line past 80 columns and no status line left.

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal pair of cols columns (the openpty(3) steps: /dev/ptmx,
// unlock, the slave's number); the test skips where there is none.
func openPTY(t *testing.T, cols int) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	fd := int(m.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Skipf("no pseudo-terminal: unlock: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Skipf("no pseudo-terminal: TIOCGPTN: %v", err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Skipf("no pseudo-terminal: %v", err)
	}
	if err := unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: uint16(cols)}); err != nil {
		m.Close()
		s.Close()
		t.Fatalf("TIOCSWINSZ: %v", err)
	}
	return m, s
}

// runOnPTY runs kneecap ARGS with stdout and stderr on a pseudo-terminal of cols columns and
// returns everything the terminal received.
func runOnPTY(t *testing.T, cols int, args ...string) []byte {
	t.Helper()
	master, slave := openPTY(t, cols)
	defer master.Close()
	cmd := kneecapCommand(t, args...)
	cmd.Env = append(cmd.Env, "COLUMNS=") // the width comes from the terminal
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		slave.Close()
		t.Fatal(err)
	}
	slave.Close() // the child holds its own copies: the master reads EIO once it exits
	var out bytes.Buffer
	_, err := io.Copy(&out, master)
	if err != nil && !errors.Is(err, syscall.EIO) {
		t.Errorf("reading the terminal: %v", err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("kneecap %s: %v\n%s", strings.Join(args, " "), err, out.Bytes())
	}
	return out.Bytes()
}

// screen is what a terminal of width columns shows after out: its lines (the scrollback
// included) and the number of times a character past the last column wrapped a line.
func screen(t *testing.T, out []byte, width int) (lines []string, wraps int) {
	t.Helper()
	var cur []rune
	col := 0
	put := func(r rune) {
		if col >= width { // autowrap: the character goes to the next line
			wraps++
			lines = append(lines, string(cur))
			cur, col = nil, 0
		}
		if col < len(cur) {
			cur[col] = r
		} else {
			cur = append(cur, r)
		}
		col++
	}
	s := []rune(string(out))
	for i := 0; i < len(s); i++ {
		switch r := s[i]; {
		case r == '\r':
			col = 0
		case r == '\n':
			lines = append(lines, string(cur))
			cur, col = nil, 0
		case r == '\x1b' && i+1 < len(s) && s[i+1] == '[':
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			if j >= len(s) || s[j] != 'K' || j != i+2 {
				t.Fatalf("escape sequence %q the test does not emulate", string(s[i:min(j+1, len(s))]))
			}
			cur = cur[:min(col, len(cur))] // EL: erase to the end of the line
			i = j
		case r == '\t' || r < ' ':
			t.Fatalf("control character %q in the output", r)
		default:
			put(r)
		}
	}
	if len(cur) > 0 {
		lines = append(lines, string(cur))
	}
	return lines, wraps
}

// TestSweepFitsTerminal: a closed-loop and an arrival-rate sweep of the built-in simulator at
// 80 columns leave no wrapped line and no status line, and print their tables' rows.
func TestSweepFitsTerminal(t *testing.T) {
	t.Parallel()
	short := []string{"--warmup", "300ms", "--duration", "1s", "--min-requests", "5", "--max-duration", "2s", "--refine", "0"}
	for _, tc := range []struct {
		name  string
		args  []string
		first string // the level table's first column
	}{
		{"concurrency", []string{"--levels", "1,4"}, "N"},
		{"rate", []string{"--rates", "4,8"}, "req/s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"sweep", "-o", t.TempDir() + "/run"}, append(tc.args, short...)...)
			out := runOnPTY(t, 80, args...)
			lines, wraps := screen(t, out, 80)
			if wraps > 0 {
				t.Errorf("%d lines wrapped at 80 columns", wraps)
			}
			headers := 0
			for _, l := range lines {
				if n := len([]rune(l)); n > 80 {
					t.Errorf("a line of %d columns: %q", n, l)
				}
				if strings.Contains(l, ", ETA ") {
					t.Errorf("a status line was left on the terminal: %q", l)
				}
				if f := strings.Fields(l); len(f) > 0 && f[0] == tc.first && strings.Contains(l, "valid") {
					headers++
				}
			}
			// The live table's header on stderr and the final one on stdout.
			if headers != 2 {
				t.Errorf("%d level-table headers starting %q, want 2 (live and final):\n%s", headers, tc.first, strings.Join(lines, "\n"))
			}
			if !bytes.Contains(out, []byte(", ETA ")) {
				t.Errorf("no status line with the sweep's ETA was drawn:\n%q", out)
			}
		})
	}
}
