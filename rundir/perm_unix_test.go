//go:build unix

package rundir

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
)

// TestPermissions: a results directory is DirPerm (0700) and its files filePerm (0600) less
// the umask: 0700/0600 under the usual 022 and under 077, and under 0400 (owner read off)
// 0300/0200, which shows no explicit chmod overrides the umask. Not parallel: the umask is
// the process's.
func TestPermissions(t *testing.T) {
	for _, tc := range []struct {
		umask           int
		dirMode, fileMo fs.FileMode
	}{{0o022, 0o700, 0o600}, {0o077, 0o700, 0o600}, {0o400, 0o300, 0o200}} {
		dir, cfg := newTestDir(t)
		old := syscall.Umask(tc.umask)
		d, err := Create(dir, cfg, "", time.Now())
		if err == nil {
			run, recs := fakeLevel(0, 1, 2)
			err = d.LevelDone(record.Level{Run: run, Records: recs})
			if err == nil {
				_, err = d.ServerMetrics()
			}
			if err == nil {
				err = WriteFileAtomic(filepath.Join(dir, AnalysisFile), []byte("{}\n"))
			}
			d.Close()
		}
		syscall.Umask(old)
		if err != nil {
			t.Fatalf("umask %03o: %v", tc.umask, err)
		}
		if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != tc.dirMode {
			t.Errorf("umask %03o: directory mode %v (%v), want %v", tc.umask, fi.Mode().Perm(), err, tc.dirMode)
		}
		for _, f := range []string{ConfigFile, LevelsFile, RecordsFile, ServerMetricsFile, AnalysisFile} {
			if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Mode().Perm() != tc.fileMo {
				t.Errorf("umask %03o: %s mode %v (%v), want %v", tc.umask, f, fi.Mode().Perm(), err, tc.fileMo)
			}
		}
		for _, d := range []string{filepath.Dir(dir), dir} { // let t.TempDir's cleanup list them
			if err := os.Chmod(d, 0o700); err != nil {
				t.Fatal(err)
			}
		}
	}
}
