package plots

import (
	"context"
	"errors"
	"testing"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/analysis/analysistest"
)

// TestRenderStops: once the context is done (an interrupt), RenderAllContext and
// RenderCompareContext render no further chart and return its error and no files.
func TestRenderStops(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if files, err := RenderAllContext(ctx, analysistest.Saturating()); !errors.Is(err, context.Canceled) || files != nil {
		t.Errorf("RenderAllContext after the interrupt: %d files, %v; want none and context.Canceled", len(files), err)
	}
	runs := []*analysis.Result{analysistest.Saturating(), analysistest.TwentyLevels()}
	if files, err := RenderCompareContext(ctx, runs, []string{"a", "b"}); !errors.Is(err, context.Canceled) || files != nil {
		t.Errorf("RenderCompareContext after the interrupt: %d files, %v; want none and context.Canceled", len(files), err)
	}
}
