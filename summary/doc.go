// Package summary reads level summaries — one analysis.Level per concurrency level — from
// the inputs `kneecap analyze` accepts (DESIGN §4): a results directory (its records.jsonl
// summarized per level, or its summary.csv when the records are gone), a level-summary CSV,
// or a directory of vLLM `bench serve` result JSON files. Load finds out which one a path
// is; ReadCSV, WriteCSV and readVLLMBench are the codecs behind it.
//
// The level-summary CSV (csvColumns) is the one table format of kneecap: WriteCSV writes
// summary.csv into every analyzed results directory, and ReadCSV reads it back exactly, as
// well as any table with at least the concurrency and output_tps columns, so published
// benchmark tables can be analyzed like a sweep.
//
// summary reads; it writes no file and prints nothing. Errors name the file, and for a CSV
// the line and the column.
package summary
