package rundir

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/sweep"
)

// ErrFinished is returned by Resume for a run that already finished: nothing to resume.
var ErrFinished = errors.New("the run already finished: nothing to resume")

// Resume reopens a results directory to continue its sweep after the last finished level:
// it truncates records.jsonl to the records of the levels listed in levels.json (dropping a
// half-written level, and a trailing level cut short by an interrupt, which is run again),
// clears the stop reason, and returns the Dir to write the next levels to
// along with what was already done. The configuration is the directory's config.yaml.
//
// A run that finished (a stop reason other than sweep.StopInterrupted) is ErrFinished, and the
// directory is left untouched: rewriting it first would erase the stop reason and let a second
// --resume continue a finished run.
func Resume(dir string) (*Dir, *Run, error) {
	res, end, err := readRun(context.Background(), dir, true)
	if err != nil {
		return nil, nil, fmt.Errorf("resume: %w", err)
	}
	if res.StopReason != "" && res.StopReason != sweep.StopInterrupted {
		// Its analysis or reports may be missing (killed while they were written): say how to
		// write them without a sweep.
		return nil, nil, fmt.Errorf("resume %s: %w (%s); to write its analysis and reports again: kneecap analyze %s",
			dir, ErrFinished, res.StopReason, dir)
	}
	if res.Measured != nil {
		if keys := config.DiffMeasured(res.Measured, config.Measured(res.Config)); len(keys) > 0 {
			return nil, nil, fmt.Errorf("resume %s: %s now differ from what the run started with (levels.json measured_config): the levels run so far would be analyzed with levels of another workload; restore %s, or start a new run",
				dir, config.KeyList(keys), filepath.Join(dir, ConfigFile))
		}
	}
	if why := res.MissingRecords(); why != "" {
		return nil, nil, fmt.Errorf("resume %s: %s: the levels run so far cannot be analyzed with the next ones", dir, why)
	}
	rp := filepath.Join(dir, RecordsFile)
	f, err := os.OpenFile(rp, os.O_WRONLY|os.O_CREATE, filePerm)
	if err != nil {
		return nil, nil, fmt.Errorf("resume %s: %w", dir, err)
	}
	if err := f.Truncate(end); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("resume %s: truncate %s: %w", dir, rp, err)
	}
	if _, err := f.Seek(end, io.SeekStart); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("resume %s: %w", dir, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("resume %s: sync %s: %w", dir, rp, err)
	}
	d := &Dir{
		path:    dir,
		records: f,
		doc: levelsDoc{
			Schema:   levelsSchema,
			Name:     res.Config.Name,
			Model:    res.Config.Target.Model,
			Endpoint: res.Endpoint,
			Start:    res.Start.UTC().Format(time.RFC3339Nano),
			Kneecap:  res.Kneecap,
			Server:   res.Server,
			Levels:   res.Runs(),

			PromptSizing: res.PromptSizing,
			GPUIdle:      res.GPUIdle,
			Trace:        res.Trace,
			Measured:     res.Measured,
		},
	}
	if err := d.writeLevels(); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("resume %s: %w", dir, err)
	}
	return d, res, nil
}
