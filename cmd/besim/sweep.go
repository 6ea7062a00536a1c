package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/besim/besim/report"
	"github.com/besim/besim/sweep"
)

// multiFlag collects a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, " ") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// parseInterspersed parses flags that may come before, between or after
// the positional arguments (besim sweep incast --set ...), returning the
// positionals. "--" ends the flags.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parse(fs, args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func cmdSweep(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("sweep", stdout, stderr)
	var sets multiFlag
	fs.Var(&sets, "set", "sweep a key: `key=v1,v2,...` (repeatable: cross product; LO..HI[:STEP][UNIT] ranges; KEY#len=N keeps the first N hosts of a host list)")
	search := fs.String("search", "", "bisect a key instead: `key=LO..HI[UNIT]`, the largest value for which --until is false")
	until := fs.String("until", "", "predicate that ends a --search: `METRIC>X` (also >= < <= == !=), e.g. pfc/frames_tx>0")
	metricsFlag := fs.String("metrics", "", "comma-separated metrics (or path patterns like flow/*/goodput) for the sweep table (default: all of the first point)")
	jobs := fs.Int("jobs", 0, "simulations run at once (default GOMAXPROCS)")
	shardFlag := fs.String("shard", "", "run only points with index%n == i: `i/n`, writing a partial file for besim merge")
	keepFlag := fs.Bool("keep", false, "also keep every point's own tables, series and notes in the result")
	out := fs.String("o", "", "output `FILE.json` (CSV and Markdown of the table beside it; default out/NAME/sweep.json (or search.json))")
	md := fs.Bool("md", false, "print the table as Markdown")
	quiet := fs.Bool("q", false, "do not print the table")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return errUsage
	}
	var axes []sweep.Axis
	for _, s := range sets {
		a, err := sweep.ParseAxis(s)
		if err != nil {
			return err
		}
		axes = append(axes, a)
	}
	opt := sweep.Options{Jobs: *jobs, Keep: *keepFlag}
	if *metricsFlag != "" {
		for _, m := range strings.Split(*metricsFlag, ",") {
			if m = strings.TrimSpace(m); m != "" {
				opt.Metrics = append(opt.Metrics, m)
			}
		}
	}
	if *shardFlag != "" {
		if opt.Shard, err = sweep.ParseShard(*shardFlag); err != nil {
			return err
		}
	}
	var srch *sweep.Search
	switch {
	case *search != "" && *until == "":
		return fmt.Errorf("--search needs --until METRIC>X")
	case *search == "" && *until != "":
		return fmt.Errorf("--until needs --search key=LO..HI")
	case *search != "":
		s, err := sweep.ParseSearch(*search)
		if err != nil {
			return err
		}
		if s.Until, err = sweep.ParsePredicate(*until); err != nil {
			return err
		}
		if len(opt.Metrics) > 0 {
			return fmt.Errorf("--metrics does not apply to --search (its table has fixed columns)")
		}
		srch = &s
	}
	base, err := sweep.Load(pos[0])
	if err != nil {
		return err
	}
	bar := newProgressBar(stderr)
	opt.Progress = bar.update
	var res *report.Result
	var st sweep.Stats
	if srch != nil {
		res, st, err = sweep.RunSearch(base, *srch, axes, opt)
	} else {
		res, st, err = sweep.Run(base, axes, opt)
	}
	bar.finish()
	if err != nil {
		return err
	}
	file := *out
	if file == "" {
		name := "sweep"
		if srch != nil {
			name = "search"
		}
		if !opt.Shard.Whole() {
			name += fmt.Sprintf("-shard-%d-of-%d", opt.Shard.I, opt.Shard.N)
		}
		file = filepath.Join("out", base.Scenario.Name, name+".json")
	}
	files, err := writeSweep(res, file)
	if err != nil {
		return err
	}
	if !*quiet {
		if err := printTable(stdout, &res.Tables[0], *md); err != nil {
			return err
		}
		for _, n := range res.Notes {
			if !strings.HasPrefix(n, "[") || srch != nil {
				fmt.Fprintln(stdout, "note:", n)
			}
		}
	}
	for _, f := range files {
		fmt.Fprintln(stderr, "wrote", f)
	}
	fmt.Fprintf(stderr, "%d simulations in %.2fs wall on %d workers (%.2fs simulating, %.1fM events)\n",
		st.Simulations, st.Wall, min(st.Jobs, max(1, st.Simulations)), st.SimSeconds, float64(st.Events)/1e6)
	return nil
}

func printTable(w io.Writer, t *report.Table, md bool) error {
	if md {
		return t.WriteMarkdown(w)
	}
	return t.WriteText(w)
}

// writeSweep writes r as JSON to file, and its first table as CSV and
// Markdown beside it (same name, .csv and .md), returning the paths.
func writeSweep(r *report.Result, file string) ([]string, error) {
	if filepath.Ext(file) != ".json" {
		return nil, fmt.Errorf("%s: name the output FILE.json (CSV and Markdown of the table are written beside it)", file)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return nil, fmt.Errorf("output folder: %w", err)
	}
	stem := strings.TrimSuffix(file, ".json")
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		return nil, err
	}
	paths := []string{file}
	data := [][]byte{js.Bytes()}
	if len(r.Tables) > 0 {
		var csv, md bytes.Buffer
		if err := r.Tables[0].WriteCSV(&csv); err != nil {
			return nil, err
		}
		if err := r.Tables[0].WriteMarkdown(&md); err != nil {
			return nil, err
		}
		paths = append(paths, stem+".csv", stem+".md")
		data = append(data, csv.Bytes(), md.Bytes())
	}
	for i, p := range paths {
		if err := os.WriteFile(p, data[i], 0o644); err != nil {
			return nil, err
		}
	}
	return paths, nil
}

// progressBar draws on stderr only when it is a terminal (not in CI, not
// into a file), so logs stay clean.
type progressBar struct {
	w     io.Writer
	on    bool
	drawn bool
	last  float64 // Elapsed at the last draw; redraws at most every 0.1 s
}

func newProgressBar(w io.Writer) *progressBar {
	return &progressBar{w: w, on: isTerminal(w) && os.Getenv("CI") == ""}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func (b *progressBar) update(p sweep.Progress) {
	if !b.on || p.Total == 0 || b.drawn && p.Done < p.Total && p.Elapsed-b.last < 0.1 {
		return
	}
	b.last = p.Elapsed
	const width = 30
	n := width * p.Done / p.Total
	eta := ""
	if p.Done > 0 && p.Done < p.Total {
		eta = fmt.Sprintf(", about %.0fs left", p.Elapsed/float64(p.Done)*float64(p.Total-p.Done))
	}
	fmt.Fprintf(b.w, "\r\033[K[%s%s] %d/%d points, %d simulations, %.1fs%s",
		strings.Repeat("=", n), strings.Repeat(" ", width-n), p.Done, p.Total, p.Simulations, p.Elapsed, eta)
	b.drawn = true
}

func (b *progressBar) finish() {
	if b.drawn {
		fmt.Fprint(b.w, "\r\033[K")
	}
}
