package rundir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kneecap/kneecap/config"
)

// DefaultPath is where a sweep with cfg writes its results: output.dir, else
// runs/<UTC time>-<name>, name being the run's name, else its model, else "sweep", with every
// character other than letters, digits, '-', '_' and '.' replaced by '-'. A shard's is
// runs/<start_at>-<name>-shard-I-of-N: the same prefix on every shard.
func DefaultPath(cfg config.Config, now time.Time) string {
	if cfg.Output.Dir != "" {
		return cfg.Output.Dir
	}
	suffix := ""
	if cfg.Shard.Sharded() {
		if at, err := cfg.Shard.Start(); err == nil {
			now = at
		}
		suffix = "-" + cfg.Shard.DirName()
	}
	name := cfg.Name
	if name == "" {
		name = cfg.Target.Model
		if name == "" {
			name = "sweep"
		}
	}
	name = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '-'
	}, filepath.Base(name))
	return filepath.Join("runs", now.UTC().Format("20060102T150405Z")+"-"+name+suffix)
}

// CheckWritable creates dir if needed and checks that a file can be created in it and that it
// holds no run; the error for a directory holding one ends with advice (such as "choose
// another -o"). created reports whether dir did not exist before, so that a caller that
// writes nothing can remove it again.
func CheckWritable(dir, advice string) (created bool, err error) {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		created = true
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, fmt.Errorf("%s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, ".kneecap-write-check*")
	if err != nil {
		if created {
			os.Remove(dir)
		}
		return false, fmt.Errorf("%s is not writable: %w", dir, err)
	}
	f.Close()
	os.Remove(f.Name())
	for _, name := range []string{LevelsFile, RecordsFile} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return false, fmt.Errorf("%s already holds a run (%s): %s", dir, name, advice)
		}
	}
	return created, nil
}
