package sim

import (
	"slices"
	"time"
)

func slicesSort(d []time.Duration) { slices.Sort(d) }
