package rundir

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/server"
)

// Run is a results directory read back: everything `kneecap analyze` needs.
type Run struct {
	// Dir is the directory read.
	Dir string
	// Config is the resolved configuration (secrets redacted).
	Config config.Config
	// Start is when the sweep started.
	Start time.Time
	// Endpoint is the target URL (the simulator's loopback URL for in-process runs).
	Endpoint string
	// Levels are the finished levels in the order they ran, each with its records (none
	// when read by ReadMeta).
	Levels []record.Level
	// StopReason is why the sweep stopped ("" while it runs).
	StopReason string
	// Shards is the number of shards merged into this run (0: not a merge).
	Shards int
	// Clocks is Merge's line on the clock offsets it applied to its levels' shards
	// (record.ClockSummary; "" when none measured against a clock server). A results
	// directory read back has it in its levels' shards.
	Clocks string
	// Kneecap is the version of kneecap that ran the sweep ("" before it was recorded).
	Kneecap string
	// Server is what the server said it is, when it said (see record.ServerInfo).
	Server *record.ServerInfo
	// PromptSizing is how the prompts were sized in the server's tokens (nil before it was
	// recorded).
	PromptSizing *record.PromptSizing
	// GPUIdle is the GPUs' idle reading before the first level (nil: no GPU telemetry).
	GPUIdle *record.GPUStats
	// Trace is the trace a trace replay replayed (nil: not one).
	Trace *record.TraceInfo
	// Measured is what config.yaml said the run measures when it started (nil before it was
	// recorded): levels.json's measured_config.
	Measured map[string]string
	// Dropped counts the lines of records.jsonl that Read left out.
	Dropped Dropped
}

// Runs returns how each level ran, in order.
func (r *Run) Runs() []record.LevelRun { return record.Runs(r.Levels) }

// Records returns every record of every level, level by level.
func (r *Run) Records() []record.Record {
	n := 0
	for _, l := range r.Levels {
		n += len(l.Records)
	}
	out := make([]record.Record, 0, n)
	for _, l := range r.Levels {
		out = append(out, l.Records...)
	}
	return out
}

// Read reads a results directory: config.yaml, levels.json and records.jsonl. Only records of
// levels listed in levels.json are returned: a level half-written when the process was killed
// is dropped, and so is a last line without its newline and a record of another run (see
// Dropped, which counts them). A corrupt line is an error naming records.jsonl:LINE.
func Read(dir string) (*Run, error) {
	return ReadContext(context.Background(), dir)
}

// ReadContext is Read, ended with ctx's error once ctx is done (an interrupt): it looks every
// checkEvery lines of records.jsonl, so that a huge one does not hold a command up.
func ReadContext(ctx context.Context, dir string) (*Run, error) {
	r, _, err := readRun(ctx, dir, false)
	return r, err
}

// checkEvery is how many lines of records.jsonl readRecords reads between two looks at its
// context: a few milliseconds of reading.
const checkEvery = 4096

// ReadMeta reads a results directory's config.yaml and levels.json but not its records (every
// level's Records is nil): enough to describe a run whose records.jsonl is gone, as in a
// published example that keeps only summary.csv.
func ReadMeta(dir string) (*Run, error) {
	res, _, err := readHead(dir, false)
	return res, err
}

// readHead reads config.yaml and levels.json; it also returns how many levels levels.json
// lists (before resume drops trailing interrupted ones).
func readHead(dir string, resume bool) (*Run, int, error) {
	cfg, err := config.Read(filepath.Join(dir, ConfigFile))
	if err != nil {
		return nil, 0, fmt.Errorf("read results %s: %w", dir, err)
	}
	lp := filepath.Join(dir, LevelsFile)
	b, err := os.ReadFile(lp)
	if err != nil {
		return nil, 0, fmt.Errorf("read results %s: %w", dir, err)
	}
	var doc levelsDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, 0, fmt.Errorf("read results %s: %s: %w", dir, lp, err)
	}
	if doc.Schema != levelsSchema {
		return nil, 0, fmt.Errorf("read results %s: %s: schema %q, want %q", dir, lp, doc.Schema, levelsSchema)
	}
	res := &Run{
		Dir:        dir,
		Config:     cfg,
		Endpoint:   doc.Endpoint,
		Levels:     record.GroupRecords(doc.Levels, nil),
		StopReason: doc.StopReason,
		Shards:     doc.Shards,
		Kneecap:    doc.Kneecap,
		Server:     doc.Server,

		PromptSizing: doc.PromptSizing,
		GPUIdle:      doc.GPUIdle,
		Trace:        doc.Trace,
		Measured:     doc.Measured,
	}
	if res.Start, err = time.Parse(time.RFC3339Nano, doc.Start); err != nil {
		return nil, 0, fmt.Errorf("read results %s: %s: start: %w", dir, lp, err)
	}
	if resume {
		for n := len(res.Levels); n > 0 && res.Levels[n-1].Run.Interrupted; n-- {
			res.Levels = res.Levels[:n-1]
		}
		for i, l := range res.Levels {
			if l.Run.Index != i {
				return nil, 0, fmt.Errorf("read results %s: %s: level %d has index %d", dir, lp, i, l.Run.Index)
			}
		}
	}
	return res, len(doc.Levels), nil
}

// readRun also returns the byte offset of records.jsonl where the listed levels' records end.
// With resume, trailing interrupted levels are dropped too (they are run again), and level
// indices must run 0, 1, 2, … so the sweep can continue at the next one.
func readRun(ctx context.Context, dir string, resume bool) (*Run, int64, error) {
	res, listedLevels, err := readHead(dir, resume)
	if err != nil {
		return nil, 0, err
	}
	rp := filepath.Join(dir, RecordsFile)
	f, err := os.Open(rp)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && listedLevels == 0 {
			return res, 0, nil
		}
		return nil, 0, fmt.Errorf("read results %s: %w", dir, err)
	}
	defer f.Close()
	end, err := readRecords(ctx, bufio.NewReaderSize(f, 1<<20), rp, res.Levels, &res.Dropped)
	if err != nil {
		return nil, 0, fmt.Errorf("read results %s: %w", dir, err)
	}
	return res, end, nil
}

// readRecords appends each record of r (records.jsonl, named path in errors) to the level of
// levels it belongs to, counts the lines it leaves out in dropped, and returns the byte offset
// where the listed levels' records end. Records of a level not in levels (half-written when
// the run was killed) must all follow the listed ones; a partial last line is dropped, and so
// is a record that does not belong to its level (foreign). Once ctx is done it returns its
// error (it looks every checkEvery lines).
func readRecords(ctx context.Context, r *bufio.Reader, path string, levels []record.Level, dropped *Dropped) (end int64, err error) {
	pos := make(map[int]int, len(levels))
	for i, l := range levels {
		pos[l.Run.Index] = i
	}
	var (
		off       int64
		line      int
		buf       []byte
		firstDrop = -1 // the first line of an unlisted level
	)
	for {
		if line%checkEvery == 0 && ctx.Err() != nil {
			return 0, ctx.Err()
		}
		buf, err = readLine(r, buf[:0], maxRecordLine)
		if errors.Is(err, errLineTooLong) {
			return 0, fmt.Errorf("%s:%d: line longer than %d bytes", path, line+1, maxRecordLine)
		}
		if errors.Is(err, io.EOF) {
			if len(bytes.TrimSpace(buf)) > 0 {
				dropped.Truncated = line + 1 // being written when the run stopped
			}
			return end, nil
		}
		if err != nil {
			return 0, fmt.Errorf("%s: %w", path, err)
		}
		line++
		off += int64(len(buf))
		body := bytes.TrimSpace(buf)
		if len(body) == 0 {
			continue
		}
		var rec record.Record
		if err := json.Unmarshal(body, &rec); err != nil {
			return 0, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if err := checkStatus(rec.Status); err != nil {
			return 0, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		i, listed := pos[rec.Level]
		switch {
		case !listed:
			dropped.Unlisted++
			if firstDrop < 0 {
				firstDrop = line
			}
		case firstDrop >= 0:
			return 0, fmt.Errorf("%s:%d: record of finished level %d after line %d of an unfinished level",
				path, line, rec.Level, firstDrop)
		case foreign(&rec, levels[i].Run):
			if dropped.Foreign == 0 {
				dropped.FirstForeign = line
			}
			dropped.Foreign++
			end = off
		default:
			levels[i].Records = append(levels[i].Records, rec)
			end = off
		}
	}
}

// foreignSlack is how far outside its level's span (warmup start to drain end) a record may
// have been sent and still belong to it: clock readings of the workers and of the level differ
// by far less.
const foreignSlack = int64(time.Second)

// foreign reports whether rec, which names level run, cannot belong to it: another
// concurrency, or sent outside the level's span — a line of another run.
func foreign(rec *record.Record, run record.LevelRun) bool {
	if rec.Concurrency != 0 && run.Concurrency != 0 && rec.Concurrency != run.Concurrency {
		return true
	}
	if run.WarmupStart == 0 || run.DrainEnd == 0 {
		return false
	}
	return rec.Sent < run.WarmupStart-foreignSlack || rec.Sent > run.DrainEnd+foreignSlack
}

// Dropped counts the lines of records.jsonl that Read left out, by reason.
type Dropped struct {
	// Truncated is the line number of a last line without its newline (it was being
	// written when the run stopped), 0 when there is none.
	Truncated int
	// Unlisted counts the records of levels levels.json does not list (the level a
	// killed run was in).
	Unlisted int
	// Foreign counts the records that cannot belong to the level they name (another
	// concurrency, or sent outside its span): lines of another run. FirstForeign is the line
	// of the first.
	Foreign, FirstForeign int
}

// Lines returns the number of lines left out.
func (d Dropped) Lines() int {
	n := d.Unlisted + d.Foreign
	if d.Truncated > 0 {
		n++
	}
	return n
}

// String says which lines were left out and why ("" when none were): "3 lines left out: the
// last one (line 812) cut short, 1 of a level levels.json does not list, 1 of another run
// (from line 17)".
func (d Dropped) String() string {
	if d.Lines() == 0 {
		return ""
	}
	var why []string
	if d.Truncated > 0 {
		why = append(why, fmt.Sprintf("the last one (line %d) cut short, as by a kill while it was written", d.Truncated))
	}
	if d.Unlisted > 0 {
		why = append(why, fmt.Sprintf("%d of a level %s does not list (the level a killed run was in)", d.Unlisted, LevelsFile))
	}
	if d.Foreign > 0 {
		why = append(why, fmt.Sprintf("%d of another run (first at line %d: another concurrency, or sent outside the level's time)", d.Foreign, d.FirstForeign))
	}
	noun := "lines"
	if d.Lines() == 1 {
		noun = "line"
	}
	return fmt.Sprintf("%d %s left out: %s", d.Lines(), noun, strings.Join(why, "; "))
}

// MissingRecords says why the records of res are missing ("" when they are not): levels.json
// lists levels, but records.jsonl holds no record of any (it is empty, or was replaced). An
// analysis of such a run would be an analysis of nothing.
func (r *Run) MissingRecords() string {
	if len(r.Levels) == 0 {
		return ""
	}
	for _, l := range r.Levels {
		if len(l.Records) > 0 {
			return ""
		}
	}
	what := "holds no record of them"
	if fi, err := os.Stat(filepath.Join(r.Dir, RecordsFile)); err == nil && fi.Size() == 0 {
		what = "is empty"
	} else if errors.Is(err, os.ErrNotExist) {
		what = "is missing"
	}
	if d := r.Dropped.String(); d != "" {
		what += " (" + d + ")"
	}
	n := len(r.Levels)
	noun := "levels"
	if n == 1 {
		noun = "level"
	}
	return fmt.Sprintf("%s lists %d %s, but %s %s", LevelsFile, n, noun, RecordsFile, what)
}

var errLineTooLong = errors.New("line too long")

// readLine appends the next line, including its '\n', to buf. At the end of the input it
// returns io.EOF (with any partial last line in buf).
func readLine(r *bufio.Reader, buf []byte, limit int) ([]byte, error) {
	for {
		frag, err := r.ReadSlice('\n')
		if len(buf)+len(frag) > limit {
			return buf, errLineTooLong
		}
		buf = append(buf, frag...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err == nil {
			return buf, nil
		}
		return buf, err
	}
}

// ReadServerMetrics reads a server_metrics.jsonl file: one MetricSample per line, in the order
// taken (the series each value came from are not recorded in the file). A corrupt line is an
// error naming FILE:LINE; a last line without its newline (cut by a kill) is dropped.
func ReadServerMetrics(path string) ([]server.MetricSample, error) {
	return readJSONLines[server.MetricSample](path)
}

// ReadGPUMetrics reads a gpu_metrics.jsonl file (GPUMetricsFile): one GPU reading per line, in
// the order taken, as ReadServerMetrics reads its file.
func ReadGPUMetrics(path string) ([]server.GPUSample, error) {
	return readJSONLines[server.GPUSample](path)
}

// readJSONLines reads a file of one JSON value per line, in order. A corrupt line is an error
// naming FILE:LINE; a last line without its newline (cut by a kill) is dropped.
func readJSONLines[T any](path string) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	var (
		out  []T
		buf  []byte
		line int
	)
	for {
		buf, err = readLine(br, buf[:0], maxRecordLine)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line+1, err)
		}
		line++
		body := bytes.TrimSpace(buf)
		if len(body) == 0 {
			continue
		}
		var m T
		if err := json.Unmarshal(body, &m); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		out = append(out, m)
	}
}

// ReadAnalysis reads the analysis.json of p (a results directory, any directory holding
// analysis.json, or the analysis.json file itself) and labels the run with meta.name, else
// its directory's name. What p is instead of one (missing, a results directory not analyzed
// yet or a shard's, a level-summary CSV, not JSON, another schema) is the error, one line
// for the command to prefix.
func ReadAnalysis(p string) (*analysis.Result, string, error) {
	file, dir := p, p
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, "", fmt.Errorf("%s: no such file or directory", p)
	case err != nil:
		return nil, "", err
	case fi.IsDir():
		file = filepath.Join(p, AnalysisFile)
	default:
		dir = filepath.Dir(p)
	}
	b, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		head, herr := ReadMeta(dir)
		if herr != nil {
			return nil, "", fmt.Errorf("%s is not a results directory (it has no %s or %s)", p, LevelsFile, AnalysisFile)
		}
		if err := CheckNotShard(head); err != nil {
			return nil, "", err
		}
		return nil, "", fmt.Errorf("%s: no analysis.json (run kneecap analyze %s first)", p, p)
	}
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", p, err)
	}
	var res analysis.Result
	if t := bytes.TrimSpace(b); len(t) == 0 || t[0] != '{' {
		what := "a results directory or an analysis.json"
		if strings.EqualFold(filepath.Ext(p), ".csv") || bytes.Contains(t[:min(len(t), 200)], []byte("concurrency")) {
			return nil, "", fmt.Errorf("%s is a level-summary CSV, not %s: run kneecap analyze %s -o DIR, then compare DIR", p, what, p)
		}
		return nil, "", fmt.Errorf("%s is not %s (it is not JSON)", p, what)
	}
	// The schema first: another file of kneecap's (levels.json) shares keys of other types.
	var head struct {
		Schema string `json:"schema"`
	}
	if err := json.Unmarshal(b, &head); err == nil && head.Schema != analysis.Schema {
		return nil, "", fmt.Errorf("%s is not an analysis.json of kneecap (schema %q, want %q)", file, head.Schema, analysis.Schema)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, "", fmt.Errorf("%s: not a valid analysis.json: %w", file, err)
	}
	if !res.Meta.API.Streams() {
		analysis.MarkWholeAnswers(res.Levels)
	}
	label := res.Meta.Name
	if label == "" {
		label = BaseName(dir)
	}
	return &res, label, nil
}
