package grid

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/internal/exit"
	"github.com/kneecap/kneecap/rundir"
)

// sameConfig refuses a scenario that has run (sub/config.yaml) when the grid's configuration
// of it (want) now differs in what it measures (config.Measured), naming the keys.
func sameConfig(sub, name string, want config.Config) error {
	head, err := rundir.ReadMeta(sub)
	if err != nil {
		return nil
	}
	keys := configDiff(head.Config, want)
	if len(keys) == 0 {
		return nil
	}
	return exit.Usagef("sweep: --resume: scenario %s ran with another configuration than the grid's config.yaml now gives it: %s differ from %s; restore them, or start a new grid",
		name, config.KeyList(keys), filepath.Join(sub, rundir.ConfigFile))
}

// configDiff lists the measured keys (a.b.c) whose values differ between a and b.
func configDiff(a, b config.Config) []string {
	return config.DiffMeasured(config.Measured(a), config.Measured(b))
}

// warnStrayDirs warns on log about each results directory in the grid's dir that is no
// scenario of cfg (a scenario removed from config.yaml): left out of the grid, not removed.
func warnStrayDirs(log io.Writer, dir string, cfg config.Config) {
	names := map[string]bool{}
	for _, sc := range cfg.Scenarios {
		names[sc.Name] = true
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, en := range ents {
		n := en.Name()
		if !en.IsDir() || names[n] || strings.Contains(n, "~") {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, n, rundir.LevelsFile)); err == nil {
			fmt.Fprintf(log, "kneecap: warning: %s holds a run but is no scenario of %s: left out of the grid\n",
				filepath.Join(dir, n), filepath.Join(dir, rundir.ConfigFile))
		}
	}
}
