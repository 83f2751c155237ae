package summary

import (
	"math"
	"slices"
	"strconv"

	"github.com/kneecap/kneecap/analysis"
)

// cancelColumns are the level-summary CSV's columns of user cancels (workload.cancel,
// analysis.Level UserCancelled): written last, and only when some level has them, so a run that
// cancels nothing keeps its columns.
var cancelColumns = []string{"user_cancelled", "user_cancelled_share"}

// withCancels reports whether some level written has user cancels' figures.
func withCancels(levels []analysis.Level) bool {
	return slices.ContainsFunc(levels, func(l analysis.Level) bool { return l.UserCancelled != nil && !l.Superseded })
}

// cancelCells are l's cells of cancelColumns: empty without its figures.
func cancelCells(l *analysis.Level) []string {
	if l.UserCancelled == nil {
		return make([]string, len(cancelColumns))
	}
	return []string{strconv.Itoa(l.UserCancelled.Count), csvNum(l.UserCancelled.Share)}
}

// cancelCell stores cell of col in lv when col is one of cancelColumns (ok); an empty cell
// stores nothing.
func cancelCell(lv *analysis.Level, col, cell string, fail func(string, ...any) error) (ok bool, err error) {
	if !slices.Contains(cancelColumns, col) {
		return false, nil
	}
	if cell == "" {
		return true, nil
	}
	v, err := strconv.ParseFloat(cell, 64)
	switch {
	case err != nil || math.IsNaN(v) || math.IsInf(v, 0):
		return true, fail("%q is not a finite number", cell)
	case col == "user_cancelled" && (v < 0 || v != math.Trunc(v) || v > math.MaxInt32):
		return true, fail("%q: must be a non-negative integer", cell)
	case col == "user_cancelled_share" && !(v >= 0 && v <= 1):
		return true, fail("%q: a share is a fraction in [0, 1]", cell)
	}
	if lv.UserCancelled == nil {
		lv.UserCancelled = &analysis.UserCancelled{Share: analysis.NaN(), MeanOutputTokens: analysis.NaN()}
	}
	if col == "user_cancelled" {
		lv.UserCancelled.Count = int(v)
	} else {
		lv.UserCancelled.Share = analysis.Float(v)
	}
	return true, nil
}
