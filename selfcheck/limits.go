package selfcheck

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/kneecap/kneecap/record"
)

// The load generator's own limits (DESIGN §7, §8): a level is checked against them before it
// starts, so that a level this process cannot carry is refused with one line naming the
// limit and the fix instead of failing its requests (as "too many open files") or the process
// ("fatal error: out of memory").

// MaxProcessWorkers is the most workers one process runs at a level: 100,000 streams, ≈ 6 GiB
// of client memory at streamBytes each and far past what one process's CPU carries (4,096 on
// two cores, DESIGN §8). A larger level is split over processes with shards.
const MaxProcessWorkers = 100_000

// streamBytes is the client memory one in-flight stream is estimated to cost, besides its
// chunk offsets (chunkBytes): the load benchmark measured 54.5 KiB a stream (slope of peak RSS
// over 256–4,096 streams) and 55.6–59.6 KiB on average at 1,024–4,096 (docs/performance.md),
// rounded up to 64 KiB.
const streamBytes = 64 << 10

// simStreamBytes is what a stream costs the simulator when it runs in the same process (its
// connection, handler goroutine and buffers): `kneecap sim` as a process of its own measured
// 44.4 KiB a stream at 1,024 streams and 40.3 KiB a stream from 1,024 to 4,096 (slope of peak
// RSS), rounded up to 48 KiB (docs/performance.md).
const simStreamBytes = 48 << 10

// chunkBytes is the memory of one kept chunk offset (Record.Chunks): a stream keeps up to
// MaxRecordedChunks of them.
const chunkBytes = 8

// reserveDescriptors are the file descriptors kept free for what the process opens during a
// sweep besides one connection a worker: records.jsonl, levels.json's temporary file,
// server_metrics.jsonl, the metrics scraper's and the server identification's connections,
// the tokenizer probes, and the runtime's own.
const reserveDescriptors = 64

// Limits are the process's own limits a level must fit in, as read by ReadLimits. A zero
// field is unknown and not checked.
type Limits struct {
	// Descriptors is the soft RLIMIT_NOFILE in force (after raising it to the hard limit);
	// DescriptorsHard the hard limit (RLIM_INFINITY, a number past any need, when unlimited).
	Descriptors, DescriptorsHard uint64
	// OpenDescriptors is the number of descriptors the process had open when read (-1:
	// unknown).
	OpenDescriptors int
	// MemAvailable is the memory available to the process, in bytes, and MemSource where it
	// was read ("MemAvailable in /proc/meminfo", "the limit in /sys/fs/cgroup/…/memory.max
	// less its usage").
	MemAvailable uint64
	MemSource    string
}

// StreamCost is what one worker of a level costs the process.
type StreamCost struct {
	// Descriptors per worker: its connection, and the simulator's end of it when the
	// simulator runs in the same process.
	Descriptors int
	// Bytes of memory per worker.
	Bytes uint64
	// Sim reports that the simulator runs in the same process (its share is included).
	Sim bool
}

// CostOf returns the cost of one worker: streamBytes, plus chunkBytes for each chunk offset a
// stream of outputTokens tokens keeps when recordChunks (MaxRecordedChunks when outputTokens
// is unknown, ≤ 0), plus simStreamBytes and a second descriptor when inProcessSim.
func CostOf(inProcessSim, recordChunks bool, outputTokens float64) StreamCost {
	c := StreamCost{Descriptors: 1, Bytes: streamBytes}
	if recordChunks {
		kept := float64(record.MaxRecordedChunks)
		if outputTokens > 0 {
			kept = math.Min(math.Ceil(outputTokens), kept)
		}
		c.Bytes += uint64(kept) * chunkBytes
	}
	if inProcessSim {
		c.Descriptors++
		c.Bytes += simStreamBytes
		c.Sim = true
	}
	return c
}

// errClientLimit is the error of a level the process cannot carry (Limits.Check).
var errClientLimit = errors.New("sweep: client limit")

// ReadLimits raises the soft RLIMIT_NOFILE to the hard limit (where the system has one) and
// reads the limits a level must fit in; what cannot be read on this system is left zero (the
// memory outside Linux).
func ReadLimits() Limits {
	l := Limits{OpenDescriptors: -1}
	l.Descriptors, l.DescriptorsHard = raiseDescriptorLimit()
	l.OpenDescriptors = openDescriptors()
	l.MemAvailable, l.MemSource = memAvailable()
	return l
}

// Check returns nil when a level of concurrency, whose workers run in this process, fits in
// l at cost per worker, else the errors.Join of one single-line error for each limit it
// exceeds (each wrapping errClientLimit), naming the limit and the fix: more than
// MaxProcessWorkers workers (alone: the other limits are then moot), more descriptors than
// the soft RLIMIT_NOFILE (those of the workers and the process's own: the ones open now and
// reserveDescriptors), more memory than is available.
func (l Limits) Check(concurrency, workers int, cost StreamCost) error {
	workers = max(workers, 0)
	what := fmt.Sprintf("concurrency %d", concurrency)
	if workers != concurrency {
		what += fmt.Sprintf(" (%d workers in this shard)", workers)
	}
	if workers > MaxProcessWorkers {
		return errors.Join(fmt.Errorf("%w: %s is more than the %d workers one process runs: lower sweep.levels, or split the level over processes with --shard I/N",
			errClientLimit, what, MaxProcessWorkers))
	}
	var errs []error
	perWorker := max(cost.Descriptors, 1)
	own := reserveDescriptors + max(l.OpenDescriptors, 0)
	need := uint64(workers)*uint64(perWorker) + uint64(own)
	if l.Descriptors > 0 && need > l.Descriptors {
		fix := fmt.Sprintf("raise it with ulimit -n %d", need)
		if need > l.DescriptorsHard {
			fix = fmt.Sprintf("raise the hard limit %d (ulimit -Hn %d as root, or the service's LimitNOFILE), then ulimit -n %d", l.DescriptorsHard, need, need)
		}
		per := fmt.Sprintf("%d a worker", perWorker)
		if cost.Sim {
			per += ", the in-process simulator holding the other end of its connection"
		}
		errs = append(errs, fmt.Errorf("%w: %s needs about %d file descriptors (%s, and %d of the process's own), more than its limit of %d (RLIMIT_NOFILE): %s, or lower sweep.levels",
			errClientLimit, what, need, per, own, l.Descriptors, fix))
	}
	if mem := uint64(workers) * cost.Bytes; l.MemAvailable > 0 && mem > l.MemAvailable {
		per := "a stream"
		if cost.Sim {
			per = "a stream, the in-process simulator's share included"
		}
		errs = append(errs, fmt.Errorf("%w: %s needs about %s of memory (%s %s, estimated), more than the %s available (%s): lower sweep.levels, or split the level over processes with --shard I/N",
			errClientLimit, what, bytesIEC(mem), bytesIEC(cost.Bytes), per, bytesIEC(l.MemAvailable), l.MemSource))
	}
	return errors.Join(errs...)
}

// bytesIEC renders b bytes with a binary unit: "64 KiB", "6.1 GiB".
func bytesIEC(b uint64) string {
	const unit = 1024
	if b < unit {
		return fmt.Sprintf("%d B", b)
	}
	v, i := float64(b), -1
	for v >= unit && i < 5 {
		v /= unit
		i++
	}
	s := strconv.FormatFloat(v, 'f', 1, 64)
	s = strings.TrimSuffix(s, ".0")
	return s + " " + string("KMGTPE"[i]) + "iB"
}

// parseMemInfo returns MemAvailable of a /proc/meminfo text, in bytes (false: absent).
func parseMemInfo(text []byte) (uint64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != "MemAvailable" {
			continue
		}
		f := strings.Fields(rest) // "1234 kB"
		if len(f) != 2 || f[1] != "kB" {
			return 0, false
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil || kb > math.MaxUint64/1024 {
			return 0, false
		}
		return kb * 1024, true
	}
	return 0, false
}

// cgroupMemory names the files of one cgroup memory controller: under Root + Path (and each
// of its ancestors, whose limits apply too) the limit and the usage, in bytes.
type cgroupMemory struct {
	Root, Path, Limit, Usage string
}

// cgroupMemories returns the memory controllers of a /proc/self/cgroup text: the cgroup v2
// line ("0::/user.slice/…": memory.max and memory.current under /sys/fs/cgroup) and the v1
// memory line ("4:memory:/docker/…": memory.limit_in_bytes and memory.usage_in_bytes under
// /sys/fs/cgroup/memory). A hybrid system lists both; only the one with the files answers.
func cgroupMemories(text []byte) []cgroupMemory {
	var out []cgroupMemory
	for _, line := range strings.Split(string(text), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 || !strings.HasPrefix(f[2], "/") {
			continue
		}
		switch {
		case f[0] == "0" && f[1] == "":
			out = append(out, cgroupMemory{"/sys/fs/cgroup", f[2], "memory.max", "memory.current"})
		case slices.Contains(strings.Split(f[1], ","), "memory"):
			out = append(out, cgroupMemory{"/sys/fs/cgroup/memory", f[2], "memory.limit_in_bytes", "memory.usage_in_bytes"})
		}
	}
	return out
}

// cgroupAvailable returns what a cgroup's memory limit leaves above its usage, in bytes (the
// contents of memory.max and memory.current, or of v1's memory.limit_in_bytes and
// memory.usage_in_bytes): false when there is no limit (v2 "max") or the files do not parse.
// A v1 cgroup without a limit reads about 2⁶³, more than any machine has: the caller keeps
// the least of what it reads.
func cgroupAvailable(maxText, currentText []byte) (uint64, bool) {
	limit, err1 := strconv.ParseUint(strings.TrimSpace(string(maxText)), 10, 64)
	used, err2 := strconv.ParseUint(strings.TrimSpace(string(currentText)), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	if used >= limit {
		return 1, true // nothing left (0 would read as unknown)
	}
	return limit - used, true
}
