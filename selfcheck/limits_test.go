package selfcheck

import (
	"errors"
	"math"
	"os"
	"runtime"
	"strings"
	"testing"
)

// TestLimitsCheck checks each limit's refusal, its one line and its fix, against limits given
// (ReadLimits' are the machine's).
func TestLimitsCheck(t *testing.T) {
	const gib = 1 << 30
	lim := Limits{Descriptors: 5000, DescriptorsHard: 5000, OpenDescriptors: 10, MemAvailable: 2 * gib, MemSource: "MemAvailable in /proc/meminfo"}
	ext := CostOf(false, true, 64) // 64 KiB + 64 offsets
	sim := CostOf(true, true, 0)   // 64 + 48 KiB + 4,096 offsets, 2 descriptors
	if ext.Bytes != 64<<10+64*8 || ext.Descriptors != 1 || sim.Bytes != 112<<10+4096*8 || sim.Descriptors != 2 {
		t.Fatalf("costs %+v %+v", ext, sim)
	}
	for _, tc := range []struct {
		name        string
		lim         Limits
		c, workers  int
		cost        StreamCost
		want        []string // one line each, in order; nil: fits
		notContains string
	}{
		{"fits", lim, 4000, 4000, ext, nil, ""},
		{"descriptors at the edge", lim, 4926, 4926, ext, nil, ""}, // 4926 + 64 + 10 = 5000
		{"one descriptor too many", lim, 4927, 4927, ext,
			[]string{"concurrency 4927 needs about 5001 file descriptors (1 a worker, and 74 of the process's own), more than its limit of 5000 (RLIMIT_NOFILE): raise the hard limit 5000 (ulimit -Hn 5001"}, ""},
		{"soft below hard", Limits{Descriptors: 1024, DescriptorsHard: 1 << 20, OpenDescriptors: 10}, 8000, 8000, ext,
			[]string{"more than its limit of 1024 (RLIMIT_NOFILE): raise it with ulimit -n 8074, or lower sweep.levels"}, "hard"},
		{"in-process simulator", lim, 4000, 4000, sim,
			[]string{"needs about 8074 file descriptors (2 a worker, the in-process simulator holding the other end of its connection, and 74"}, ""},
		{"memory", lim, 35000, 35000, ext,
			[]string{"file descriptors", "concurrency 35000 needs about 2.2 GiB of memory (64.5 KiB a stream, estimated), more than the 2 GiB available (MemAvailable in /proc/meminfo)"}, ""},
		{"memory only", Limits{MemAvailable: gib, MemSource: "x"}, 20000, 20000, sim, []string{"concurrency 20000 needs about 2.7 GiB of memory (144 KiB a stream, the in-process simulator's share included, estimated)"}, ""},
		{"unknown limits are not checked", Limits{OpenDescriptors: -1}, MaxProcessWorkers, MaxProcessWorkers, sim, nil, ""},
		{"maximum level, alone", lim, MaxProcessWorkers + 1, MaxProcessWorkers + 1, ext,
			[]string{"concurrency 100001 is more than the 100000 workers one process runs: lower sweep.levels, or split the level over processes with --shard I/N"}, "descriptors"},
		{"a shard's part", lim, 1_000_000, 250_000, ext, []string{"concurrency 1000000 (250000 workers in this shard) is more than the 100000"}, ""},
		{"a shard's part fits", Limits{OpenDescriptors: -1}, 300_000, 100_000, ext, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.lim.Check(tc.c, tc.workers, tc.cost)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, errClientLimit) {
				t.Fatalf("err %v, want ErrClientLimit", err)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tc.want) {
				t.Fatalf("%d lines, want %d:\n%v", len(lines), len(tc.want), err)
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(lines[i], "sweep: client limit: ") || !strings.Contains(lines[i], w) {
					t.Errorf("line %d:\n%s\nwant it to contain %q", i+1, lines[i], w)
				}
			}
			if tc.notContains != "" && strings.Contains(err.Error(), tc.notContains) {
				t.Errorf("%v\nshould not mention %q", err, tc.notContains)
			}
		})
	}
}

// TestReadLimits checks the limits of this process as read: the soft descriptor limit raised
// to the hard one, open descriptors counted, and on Linux the memory of /proc/meminfo.
func TestReadLimits(t *testing.T) {
	l := ReadLimits()
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		if l.Descriptors != 0 || l.MemAvailable != 0 {
			t.Fatalf("%+v, want unknown limits", l)
		}
		return
	}
	if l.Descriptors == 0 || l.Descriptors > l.DescriptorsHard {
		t.Fatalf("descriptors %d (hard %d)", l.Descriptors, l.DescriptorsHard)
	}
	if runtime.GOOS == "linux" && l.Descriptors != l.DescriptorsHard {
		t.Errorf("soft limit %d, want the hard limit %d", l.Descriptors, l.DescriptorsHard)
	}
	// 20 more files open: 20 more descriptors counted (± 5 that other goroutines of the test
	// binary, closing connections, may open or close meanwhile).
	for range 20 {
		f, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
	}
	if l2 := ReadLimits(); l.OpenDescriptors < 3 || l2.OpenDescriptors < l.OpenDescriptors+15 || l2.OpenDescriptors > l.OpenDescriptors+25 {
		t.Errorf("open descriptors %d, then %d with 20 more files open", l.OpenDescriptors, l2.OpenDescriptors)
	}
	if runtime.GOOS != "linux" {
		return
	}
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Skip(err)
	}
	mem, ok := parseMemInfo(b)
	if !ok || l.MemAvailable == 0 || l.MemAvailable > mem+mem/10 {
		t.Errorf("memory available %d from %q; /proc/meminfo says %d", l.MemAvailable, l.MemSource, mem)
	}
}

func TestParseMemInfo(t *testing.T) {
	text := "MemTotal:       24684084 kB\nMemFree:         1000 kB\nMemAvailable:   24024156 kB\nBuffers: 1 kB\n"
	if v, ok := parseMemInfo([]byte(text)); !ok || v != 24024156*1024 {
		t.Errorf("MemAvailable = %d, %v", v, ok)
	}
	for _, bad := range []string{"MemTotal: 5 kB\n", "MemAvailable: 5 MB\n", "MemAvailable: x kB\n", "MemAvailable: 99999999999999999999 kB\n", ""} {
		if v, ok := parseMemInfo([]byte(bad)); ok {
			t.Errorf("%q: %d, want not found", bad, v)
		}
	}
}

func TestCgroupMemory(t *testing.T) {
	hybrid := "9:name=systemd:/\n4:memory:/process_api/69a\n3:cpu,cpuacct:/\n0::/\n"
	got := cgroupMemories([]byte(hybrid))
	want := []cgroupMemory{
		{"/sys/fs/cgroup/memory", "/process_api/69a", "memory.limit_in_bytes", "memory.usage_in_bytes"},
		{"/sys/fs/cgroup", "/", "memory.max", "memory.current"},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("cgroupMemories = %+v, want %+v", got, want)
	}
	if got := cgroupMemories([]byte("2:cpu,memory:/docker/x\n")); len(got) != 1 || got[0].Path != "/docker/x" {
		t.Errorf("joined controllers: %+v", got)
	}
	for _, tc := range []struct {
		max, cur string
		want     uint64
		ok       bool
	}{
		{"2147483648\n", "1073741824\n", 1 << 30, true},
		{"max\n", "5\n", 0, false},
		{"100", "200", 1, true}, // over its limit: nothing left, but known
		{"9223372036854771712", "839524352", 9223372036854771712 - 839524352, true},
		{"", "1", 0, false},
	} {
		if v, ok := cgroupAvailable([]byte(tc.max), []byte(tc.cur)); v != tc.want || ok != tc.ok {
			t.Errorf("cgroupAvailable(%q, %q) = %d, %v; want %d, %v", tc.max, tc.cur, v, ok, tc.want, tc.ok)
		}
	}
}

func TestBytesIEC(t *testing.T) {
	for _, tc := range []struct {
		b    uint64
		want string
	}{{512, "512 B"}, {64 << 10, "64 KiB"}, {66048, "64.5 KiB"}, {3 << 29, "1.5 GiB"}, {math.MaxUint64, "16 EiB"}} {
		if got := bytesIEC(tc.b); got != tc.want {
			t.Errorf("bytesIEC(%d) = %q, want %q", tc.b, got, tc.want)
		}
	}
}
