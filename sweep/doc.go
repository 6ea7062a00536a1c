// Package sweep runs many variants of one scenario: parameter sweeps
// (cross products of --set key=v1,v2 overrides), bisection searches for
// the largest value of a key before a metric crosses a threshold, and
// sharded runs with a deterministic merge.
//
// Overrides edit the YAML of the scenario, not the Go structs: each
// Override's dotted path (fabric.links.rate, flows[0].size, flows[victim],
// seed; see Override) is applied to the yaml.Node tree of the source, and
// the edited text goes through scenarios.Parse, so every strict schema and
// semantic check applies to every point. When the override replaces a
// value written on one line the text is edited in place and file:line
// positions stay true; an error at an overridden key is reported as the
// override's ("--set fabric.links.rate=25Gbs: ..."). A key the scenario
// leaves out is created (and the loader rejects it if the schema has no
// such key); list items are never created.
//
// Determinism. Points are numbered in cross-product order (the first axis
// varies slowest) and each is one single-threaded simulation; Run hands
// points to Options.Jobs goroutines but assembles rows in point order, so
// the result is byte-identical for any Jobs and equal to Merge of its
// shards. Wall-clock facts are returned in Stats, never in the result.
//
// Result files are report.Results: a table "sweep" (or "search") with one
// row per point keyed "k1=v1,k2=v2"; metrics sweep/points and
// sweep/simulations (and sweep/shard, sweep/shards in a partial file); and
// with Options.Keep each point's own tables, series and notes, named
// "[POINT] NAME". Sweep columns default to every metric of point 0, so a
// shard without point 0 runs it once to learn them unless the metrics are
// named literally.
//
// Replications (Options.Replications) add a last "seed" axis and pool
// each point's runs by merging their latency histograms (replicate.go,
// TableReplications); batch array jobs find their shard with ShardFromEnv.
package sweep
