package selfcheck

import (
	"os"
	"path"
)

// memAvailable returns the memory available to the process, in bytes, and where it was read:
// MemAvailable of /proc/meminfo, or, when it is less, what the process's cgroup (v2 or v1,
// it or an ancestor: a container's limit) leaves above its usage; 0, "" when nothing can be
// read.
func memAvailable() (uint64, string) {
	var avail uint64
	var from string
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if v, ok := parseMemInfo(b); ok {
			avail, from = v, "MemAvailable in /proc/meminfo"
		}
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return avail, from
	}
	for _, cg := range cgroupMemories(b) {
		// The cgroup and its ancestors up to the root (a path has at most a few dozen parts).
		for dir, n := path.Clean(cg.Path), 0; n < 64; dir, n = path.Dir(dir), n+1 {
			full := path.Join(cg.Root, dir)
			limit, err1 := os.ReadFile(path.Join(full, cg.Limit))
			usage, err2 := os.ReadFile(path.Join(full, cg.Usage))
			if err1 == nil && err2 == nil {
				if v, ok := cgroupAvailable(limit, usage); ok && (avail == 0 || v < avail) {
					avail, from = v, "the limit in "+path.Join(full, cg.Limit)+" less its usage"
				}
			}
			if dir == "/" {
				break
			}
		}
	}
	return avail, from
}
