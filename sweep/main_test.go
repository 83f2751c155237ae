package sweep_test

import (
	"flag"
	"os"
	"runtime"
	"strconv"
	"testing"
)

// TestMain runs GOMAXPROCS + 1 parallel tests at once unless -parallel says otherwise (go
// test's default is GOMAXPROCS): the slow tests of this package wait on slowed engines
// (TestRateSimTruth, TestArticleWorkedExample: 36 s and 26 s of wall time, a few seconds of
// CPU), and with two at once on two cores the others queued behind them.
func TestMain(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		if err := flag.Set("test.parallel", strconv.Itoa(runtime.GOMAXPROCS(0)+1)); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}
