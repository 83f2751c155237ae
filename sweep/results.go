package sweep

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"gopkg.in/yaml.v3"
)

// Files of a results directory (DESIGN §5).
const (
	ConfigFile        = "config.yaml"
	LevelsFile        = "levels.json"
	RecordsFile       = "records.jsonl"
	ServerMetricsFile = "server_metrics.jsonl"
)

// LevelsSchema is the schema tag of levels.json.
const LevelsSchema = "kneecap.levels/v1"

// MaxRecordLine is the longest records.jsonl line ReadResults accepts, in bytes (a record
// with per-chunk offsets of a 100k-token answer is about 1 MB).
const MaxRecordLine = 16 << 20

// levelsDoc is the JSON document levels.json.
type levelsDoc struct {
	Schema     string `json:"schema"`
	Name       string `json:"name"`
	Model      string `json:"model"`
	Endpoint   string `json:"endpoint"`
	Start      string `json:"start"`
	StopReason string `json:"stop_reason"`
	// Shards is the number of shards `kneecap merge` combined (absent: not a merge).
	Shards int `json:"merged_shards,omitempty"`
	// Kneecap is the version of kneecap that ran the sweep; Server what the server said it
	// is (see ServerInfo).
	Kneecap string      `json:"kneecap,omitempty"`
	Server  *ServerInfo `json:"server_info,omitempty"`
	Levels  []LevelRun  `json:"levels"`
}

// Dir is a results directory being written. It implements Sink: every finished level's
// records are appended to records.jsonl and fsynced, then levels.json is rewritten atomically,
// so a level listed in levels.json always has all its records on disk. Safe for concurrent
// use.
type Dir struct {
	path string

	mu      sync.Mutex
	doc     levelsDoc
	records *os.File
	metrics *os.File
	closed  bool
}

var _ Sink = (*Dir)(nil)

// CreateDir creates the results directory dir (with parents), checks that it is writable and
// holds no earlier run, and writes config.yaml (cfg.Redacted()) and an empty levels.json.
// endpoint is the URL under test (the simulator's loopback URL for in-process runs).
func CreateDir(dir string, cfg Config, endpoint string, start time.Time) (*Dir, error) {
	if dir == "" {
		return nil, errors.New("create results dir: empty path")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create results dir %s: %w", dir, err)
	}
	for _, f := range []string{LevelsFile, RecordsFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return nil, fmt.Errorf("create results dir %s: it already holds a run (%s); use --resume %s or another -o", dir, f, dir)
		}
	}
	d := &Dir{
		path: dir,
		doc: levelsDoc{
			Schema:   LevelsSchema,
			Name:     cfg.Name,
			Model:    cfg.Target.Model,
			Endpoint: redactURL(endpoint),
			Start:    start.UTC().Format(time.RFC3339Nano),
			Levels:   []LevelRun{},
		},
	}
	var buf bytes.Buffer
	buf.WriteString("# kneecap resolved configuration (secrets redacted); `kneecap sweep --resume` reads it.\n")
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(cfg.Redacted()); err != nil {
		return nil, fmt.Errorf("create results dir %s: encode config: %w", dir, err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("create results dir %s: encode config: %w", dir, err)
	}
	if err := WriteFileAtomic(filepath.Join(dir, ConfigFile), buf.Bytes()); err != nil {
		return nil, fmt.Errorf("create results dir %s: %w", dir, err)
	}
	if err := d.writeLevels(); err != nil {
		return nil, fmt.Errorf("create results dir %s: %w", dir, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, RecordsFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create results dir %s: %w", dir, err)
	}
	d.records = f
	return d, nil
}

// Path returns the directory's path.
func (d *Dir) Path() string { return d.path }

// SetMerged records in levels.json (at its next write) that the directory holds n shards
// merged by `kneecap merge`.
func (d *Dir) SetMerged(n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.doc.Shards = n
}

// LevelDone appends the level's records to records.jsonl, fsyncs it, then rewrites
// levels.json atomically with the level's run added.
func (d *Dir) LevelDone(l Level) error {
	run, records := l.Run, l.Records
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("results %s: level %d: directory closed", d.path, run.Index)
	}
	w := bufio.NewWriterSize(d.records, 256<<10)
	enc := json.NewEncoder(w)
	for i := range records {
		if err := enc.Encode(&records[i]); err != nil {
			return fmt.Errorf("results %s: write %s: %w", d.path, RecordsFile, err)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("results %s: write %s: %w", d.path, RecordsFile, err)
	}
	if err := d.records.Sync(); err != nil {
		return fmt.Errorf("results %s: sync %s: %w", d.path, RecordsFile, err)
	}
	d.doc.Levels = append(d.doc.Levels, run)
	if err := d.writeLevels(); err != nil {
		d.doc.Levels = d.doc.Levels[:len(d.doc.Levels)-1]
		return fmt.Errorf("results %s: %w", d.path, err)
	}
	return nil
}

// Finish records why the sweep stopped in levels.json.
func (d *Dir) Finish(reason string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.doc.StopReason = reason
	if err := d.writeLevels(); err != nil {
		return fmt.Errorf("results %s: %w", d.path, err)
	}
	return nil
}

// ServerMetrics opens server_metrics.jsonl for appending and returns it; the Dir closes it in
// Close. Repeated calls return the same writer.
func (d *Dir) ServerMetrics() (io.Writer, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, fmt.Errorf("results %s: directory closed", d.path)
	}
	if d.metrics != nil {
		return d.metrics, nil
	}
	f, err := os.OpenFile(filepath.Join(d.path, ServerMetricsFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("results %s: %w", d.path, err)
	}
	d.metrics = f
	return f, nil
}

// Close syncs and closes the directory's open files. Stop writers of ServerMetrics first.
func (d *Dir) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	var errs []error
	for _, f := range []*os.File{d.records, d.metrics} {
		if f == nil {
			continue
		}
		if err := f.Sync(); err != nil {
			errs = append(errs, err)
		}
		if err := f.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("results %s: close: %w", d.path, err)
	}
	return nil
}

// writeLevels rewrites levels.json atomically. d.mu is held or d is not shared yet.
func (d *Dir) writeLevels() error {
	b, err := json.MarshalIndent(&d.doc, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", LevelsFile, err)
	}
	return WriteFileAtomic(filepath.Join(d.path, LevelsFile), append(b, '\n'))
}

// WriteFileAtomic writes data to a temporary file in path's directory, fsyncs it and renames it
// over path, so readers see the old or the new file, never a mix.
func WriteFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// ReadResults reads a results directory: config.yaml, levels.json and records.jsonl. Only
// records of levels listed in levels.json are returned: a level half-written when the process
// was killed is dropped, and so is a last line without its newline. A corrupt line is an error
// naming records.jsonl:LINE.
func ReadResults(dir string) (*Results, error) {
	r, _, err := readResults(dir, false)
	return r, err
}

// ReadResultsMeta reads a results directory's config.yaml and levels.json but not its
// records (Records is nil): enough to describe a run whose records.jsonl is gone, as in a
// published example that keeps only summary.csv.
func ReadResultsMeta(dir string) (*Results, error) {
	res, _, err := readHead(dir, false)
	return res, err
}

// readHead reads config.yaml and levels.json; it also returns how many levels levels.json
// lists (before resume drops trailing interrupted ones).
func readHead(dir string, resume bool) (*Results, int, error) {
	cfg, err := ReadConfig(filepath.Join(dir, ConfigFile))
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
	if doc.Schema != LevelsSchema {
		return nil, 0, fmt.Errorf("read results %s: %s: schema %q, want %q", dir, lp, doc.Schema, LevelsSchema)
	}
	res := &Results{
		Dir:        dir,
		Config:     cfg,
		Endpoint:   doc.Endpoint,
		Levels:     doc.Levels,
		StopReason: doc.StopReason,
		Shards:     doc.Shards,
		Kneecap:    doc.Kneecap,
		Server:     doc.Server,
	}
	if res.Start, err = time.Parse(time.RFC3339Nano, doc.Start); err != nil {
		return nil, 0, fmt.Errorf("read results %s: %s: start: %w", dir, lp, err)
	}
	if resume {
		for len(res.Levels) > 0 && res.Levels[len(res.Levels)-1].Interrupted {
			res.Levels = res.Levels[:len(res.Levels)-1]
		}
		for i, l := range res.Levels {
			if l.Index != i {
				return nil, 0, fmt.Errorf("read results %s: %s: level %d has index %d", dir, lp, i, l.Index)
			}
		}
	}
	return res, len(doc.Levels), nil
}

// readResults also returns the byte offset of records.jsonl where the listed levels' records
// end. With resume, trailing interrupted levels are dropped too (they are run again), and level
// indices must run 0, 1, 2, … so the sweep can continue at the next one.
func readResults(dir string, resume bool) (*Results, int64, error) {
	res, listedLevels, err := readHead(dir, resume)
	if err != nil {
		return nil, 0, err
	}
	listed := map[int]bool{}
	for _, l := range res.Levels {
		listed[l.Index] = true
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
	br := bufio.NewReaderSize(f, 1<<20)
	var (
		off, end  int64
		line      int
		unlisted  bool // a record of an unlisted level was seen
		buf       []byte
		firstDrop = -1
	)
	for {
		buf, err = readLine(br, buf[:0], MaxRecordLine)
		if errors.Is(err, errLineTooLong) {
			return nil, 0, fmt.Errorf("read results %s: %s:%d: line longer than %d bytes", dir, rp, line+1, MaxRecordLine)
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, 0, fmt.Errorf("read results %s: %s: %w", dir, rp, err)
		}
		if errors.Is(err, io.EOF) {
			break // a partial last line (no newline) was being written when the run stopped
		}
		line++
		off += int64(len(buf))
		body := bytes.TrimSpace(buf)
		if len(body) == 0 {
			continue
		}
		var rec Record
		if err := json.Unmarshal(body, &rec); err != nil {
			return nil, 0, fmt.Errorf("read results %s: %s:%d: %w", dir, rp, line, err)
		}
		if !listed[rec.Level] {
			if !unlisted {
				firstDrop = line
			}
			unlisted = true
			continue
		}
		if unlisted {
			return nil, 0, fmt.Errorf("read results %s: %s:%d: record of finished level %d after line %d of an unfinished level",
				dir, rp, line, rec.Level, firstDrop)
		}
		res.Records = append(res.Records, rec)
		end = off
	}
	return res, end, nil
}

var errLineTooLong = errors.New("line too long")

// ErrFinished is returned by ResumeDir for a run that already finished: nothing to resume.
var ErrFinished = errors.New("the run already finished: nothing to resume")

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

// ResumeDir reopens a results directory to continue its sweep after the last finished level:
// it truncates records.jsonl to the records of the levels listed in levels.json (dropping a
// half-written level, and a trailing level cut short by an interrupt, which is run again),
// clears the stop reason, and returns the Dir to write the next levels to
// along with what was already done. The configuration is the directory's config.yaml.
//
// A run that finished (a stop reason other than StopInterrupted) is ErrFinished, and the
// directory is left untouched: rewriting it first would erase the stop reason and let a second
// --resume continue a finished run.
func ResumeDir(dir string) (*Dir, *Results, error) {
	res, end, err := readResults(dir, true)
	if err != nil {
		return nil, nil, fmt.Errorf("resume: %w", err)
	}
	if res.StopReason != "" && res.StopReason != StopInterrupted {
		return nil, nil, fmt.Errorf("resume %s: %w (%s)", dir, ErrFinished, res.StopReason)
	}
	rp := filepath.Join(dir, RecordsFile)
	f, err := os.OpenFile(rp, os.O_WRONLY|os.O_CREATE, 0o644)
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
			Schema:   LevelsSchema,
			Name:     res.Config.Name,
			Model:    res.Config.Target.Model,
			Endpoint: res.Endpoint,
			Start:    res.Start.UTC().Format(time.RFC3339Nano),
			Kneecap:  res.Kneecap,
			Server:   res.Server,
			Levels:   append([]LevelRun{}, res.Levels...),
		},
	}
	if err := d.writeLevels(); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("resume %s: %w", dir, err)
	}
	return d, res, nil
}

// SetProvenance records in levels.json (at its next write) the kneecap version that runs the
// sweep and what the server said it is (nil: it said nothing), and writes the server's
// redacted info bodies (RedactServerInfo) to ServerInfoFile when there are any.
func (d *Dir) SetProvenance(kneecap string, server *ServerInfo, infoDoc []byte) error {
	if len(infoDoc) > 0 {
		if err := WriteFileAtomic(filepath.Join(d.path, ServerInfoFile), infoDoc); err != nil {
			return fmt.Errorf("results %s: %w", d.path, err)
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.doc.Kneecap, d.doc.Server = kneecap, server
	return nil
}

// SetEndpoint changes the endpoint recorded in levels.json (a resumed in-process run gets a
// new loopback port). It takes effect at the next write.
func (d *Dir) SetEndpoint(endpoint string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.doc.Endpoint = redactURL(endpoint)
}
