// Package render turns what a run found into what people and CI read: a
// Report, a SuiteReport or a soak's result as terminal text (coloured on a
// terminal, with a live progress line while a run goes), JUnit XML for test
// reporters, Markdown for a pull request or a GitHub job summary, and one
// self-contained HTML page per run (WriteHTML, WriteSoakHTML) drawn from
// the report and its history: timelines, histograms and plots in inline
// SVG, nothing fetched. The JSON report is the root package's own
// (Report.WriteJSON).
//
// The CI renderings are deterministic: times come from the Report's own
// Stats, never from the clock, so a report renders the same every time.
//
// It imports only the root package and the standard library: it never
// runs, checks or decides anything, so the CLI, the demo and a program of
// one's own render a verdict the same way.
package render
