package summary

import (
	"strings"
	"testing"

	"github.com/kneecap/kneecap/analysis"
)

// TestCSVCancelColumns: a run with user cancels appends user_cancelled and
// user_cancelled_share after every other column and reads them back; a run without keeps its
// header.
func TestCSVCancelColumns(t *testing.T) {
	in := sampleLevels()
	plain, _ := roundTrip(t, in)
	if strings.Contains(strings.SplitN(plain, "\n", 2)[0], "cancelled") {
		t.Fatalf("a run without cancels has the cancel columns: %s", strings.SplitN(plain, "\n", 2)[0])
	}
	in[1].UserCancelled = &analysis.UserCancelled{Count: 12, Share: 0.2}
	in[2].UserCancelled = &analysis.UserCancelled{Count: 0, Share: 0}
	text, out := roundTrip(t, in)
	if head := strings.SplitN(text, "\n", 2)[0]; !strings.HasSuffix(head, ",user_cancelled,user_cancelled_share") {
		t.Errorf("header %q, want the cancel columns last", head)
	}
	if c := out[1].UserCancelled; c == nil || c.Count != 12 || c.Share != 0.2 {
		t.Errorf("level 1 cancelled %+v after the round trip, want 12 and 0.2", c)
	}
	if c := out[2].UserCancelled; c == nil || c.Count != 0 || c.Share != 0 {
		t.Errorf("level 2 cancelled %+v, want 0 and 0", c)
	}
	if out[0].UserCancelled != nil {
		t.Errorf("level 0 cancelled %+v, want none (empty cells)", out[0].UserCancelled)
	}
	if _, err := ReadCSV(strings.NewReader("concurrency,output_tps,user_cancelled_share\n1,10,1.5\n"), "x.csv"); err == nil ||
		!strings.Contains(err.Error(), `x.csv:2: column "user_cancelled_share"`) {
		t.Errorf("a share of 1.5: %v, want an error naming x.csv:2 and the column", err)
	}
}
