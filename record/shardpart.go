package record

// ShardPart describes a shard's part of a level (LevelRun.Shard).
type ShardPart struct {
	// Index and Count are the shard's number and the number of shards.
	Index int `json:"index"`
	Count int `json:"count"`
	// FirstWorker and Workers are the shard's workers: FirstWorker … FirstWorker+Workers-1
	// of the level's Concurrency.
	FirstWorker int `json:"first_worker"`
	Workers     int `json:"workers"`
}
