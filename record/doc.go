// Package record is the contract between the load generator and the analysis (DESIGN §2):
// what a request leaves behind (Record), what a level's run leaves (LevelRun, with the
// client's and the server's statistics of its window), the window arithmetic that defines
// every rate of a window once (SentInWindow, TokensInWindow, WindowTotals), the steady-state
// statistics, and the metadata a run carries (ServerInfo, PromptSizing, TraceInfo,
// StopRules). It imports no kneecap package: sweep writes these types, analysis, report and
// summary read them.
package record
