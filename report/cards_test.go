package report_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/analysis/analysistest"
	"github.com/kneecap/kneecap/report"
)

// TestCards: report.html of every fixture opens with one figure card per headline line — max
// TPS, knee, the efficient point below a plateau-onset knee, SLO point, blow-up and replicas;
// an arrival-rate run's capacity, max TPS, SLO point, blow-up and replicas — before the
// answer; none shows NaN.
func TestCards(t *testing.T) {
	for _, f := range append(analysistest.Fixtures(), analysistest.RateFixtures()...) {
		res := f.Result()
		if res == nil {
			continue
		}
		t.Run(f.Name, func(t *testing.T) {
			var b bytes.Buffer
			if err := report.HTML(&b, res, nil); err != nil {
				t.Fatal(err)
			}
			doc := b.String()
			n := strings.Count(doc, `<div class="card">`)
			want := 5
			if k := res.Knee; k != nil && k.Rule == analysis.RulePlateauOnset {
				want = 6
			}
			if n != want {
				t.Errorf("%d cards, want %d", n, want)
			}
			head := doc[:strings.Index(doc, "</header>")]
			if !strings.Contains(head, `<p class="answer">`) || strings.Index(head, `<div class="cards">`) > strings.Index(head, `<p class="answer">`) {
				t.Error("the cards do not come before the answer in the header")
			}
			if strings.Contains(head, "NaN") {
				t.Error("a card shows NaN, want —")
			}
		})
	}
}
