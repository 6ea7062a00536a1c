package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"

	"github.com/besim/besim/internal/fileio"
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
	shardFlag := fs.String("shard", "", "run only points with index%n == i: `i/n`, writing a partial file for besim merge; \"auto\" (also the default when a batch array job's variables are set): from $BESIM_SHARD, Slurm, Grid Engine, PBS, LSF or a Kubernetes Indexed Job (see sweep.ShardFromEnv); 0/1 runs the whole sweep")
	replications := fs.Int("replications", 0, "run every point `N` times with seeds S..S+N-1 (S: the scenario's seed) and pool their latency histograms (table replications)")
	keepFlag := fs.Bool("keep", false, "also keep every point's own tables, series and notes in the result")
	fullProbes := fs.Bool("full-probes", false, "run every probe of a --search to its end (default: a probe stops as soon as --until is decided on a counter that only grows, such as pfc/frames_tx; the answer is the same)")
	out := fs.String("o", "", "output `FILE.json` (CSV and Markdown of the table beside it; default out/NAME/sweep.json (or search.json))")
	md := fs.Bool("md", false, "print the table as Markdown")
	quiet := fs.Bool("q", false, "do not print the table")
	keepGoing := fs.Bool("keep-going", false, "exit 0 even when some points failed (their rows still carry the error)")
	memLimit := memoryFlag(fs)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if err := memLimit(); err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return errUsage
	}
	jobsSet := false
	fs.Visit(func(f *flag.Flag) { jobsSet = jobsSet || f.Name == "jobs" })
	if jobsSet && *jobs < 1 {
		return fmt.Errorf("--jobs %d: want at least 1 (default: GOMAXPROCS, %d here)", *jobs, runtime.GOMAXPROCS(0))
	}
	var axes []sweep.Axis
	for _, s := range sets {
		a, err := sweep.ParseAxis(s)
		if err != nil {
			return err
		}
		axes = append(axes, a)
	}
	opt := sweep.Options{Jobs: *jobs, Keep: *keepFlag, FullProbes: *fullProbes}
	if *metricsFlag != "" {
		for _, m := range strings.Split(*metricsFlag, ",") {
			if m = strings.TrimSpace(m); m != "" {
				opt.Metrics = append(opt.Metrics, m)
			}
		}
	}
	switch *shardFlag {
	case "", "auto":
		s, from, found, err := sweep.ShardFromEnv(os.Getenv)
		if err != nil {
			return err
		}
		if !found && *shardFlag == "auto" {
			return fmt.Errorf("--shard auto: no batch array variables set (BESIM_SHARD, SLURM_ARRAY_TASK_ID, SGE_TASK_ID, PBS_ARRAY_INDEX, LSB_JOBINDEX or JOB_COMPLETION_INDEX)")
		}
		if found {
			opt.Shard = s
			fmt.Fprintf(stderr, "besim: shard %s from %s (--shard 0/1 runs the whole sweep)\n", s, from)
		}
	default:
		if opt.Shard, err = sweep.ParseShard(*shardFlag); err != nil {
			return err
		}
	}
	opt.Replications = *replications
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
	stop, release := onInterrupt(stderr)
	defer release()
	opt.Stop = stop
	var res *report.Result
	var st sweep.Stats
	if srch != nil {
		res, st, err = sweep.RunSearch(base, *srch, axes, opt)
	} else {
		res, st, err = sweep.Run(base, axes, opt)
	}
	bar.finish()
	// A sweep with failed or unfinished points still writes what it has
	// (the rows say which failed and why) and then exits non-zero.
	var inc *sweep.Incomplete
	if err != nil && !errors.As(err, &inc) {
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
	switch {
	case inc == nil:
		return nil
	case inc.Interrupted:
		return interrupted{inc}
	case *keepGoing:
		fmt.Fprintln(stderr, "besim: warning (--keep-going):", inc)
		return nil
	}
	return inc
}

// interrupted is the error of a sweep or search ended by SIGINT; besim
// exits with ExitInterrupted after writing the finished points.
type interrupted struct{ err error }

func (e interrupted) Error() string { return e.err.Error() }
func (e interrupted) Unwrap() error { return e.err }

// ExitInterrupted is besim's exit status after SIGINT or SIGTERM (128 + 2,
// as shells report it).
const ExitInterrupted = 130

// notifyInterrupt subscribes c to SIGINT and SIGTERM (a test replaces it).
var notifyInterrupt = func(c chan<- os.Signal) { signal.Notify(c, os.Interrupt, syscall.SIGTERM) }

// onInterrupt returns a channel closed at the first SIGINT or SIGTERM,
// after which the default handling comes back (a second one kills), and a
// function that stops listening.
func onInterrupt(stderr io.Writer) (<-chan struct{}, func()) {
	stop := make(chan struct{})
	sig := make(chan os.Signal, 1)
	notifyInterrupt(sig)
	quit := make(chan struct{})
	go func() {
		select {
		case <-sig:
			signal.Stop(sig)
			fmt.Fprintln(stderr, "\nbesim: interrupted: writing the finished points (interrupt again to abandon them)")
			close(stop)
		case <-quit:
		}
	}()
	var once sync.Once
	return stop, func() {
		once.Do(func() {
			signal.Stop(sig)
			close(quit)
		})
	}
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
	stem := strings.TrimSuffix(file, ".json")
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		return nil, err
	}
	files := []fileio.File{{Name: file, Data: js.Bytes()}}
	if len(r.Tables) > 0 {
		var csv, md bytes.Buffer
		if err := r.Tables[0].WriteCSV(&csv); err != nil {
			return nil, err
		}
		if err := r.Tables[0].WriteMarkdown(&md); err != nil {
			return nil, err
		}
		files = append(files, fileio.File{Name: stem + ".csv", Data: csv.Bytes()}, fileio.File{Name: stem + ".md", Data: md.Bytes()})
	}
	// Each file is written to a temporary one and renamed over its
	// target once all are written: none is ever half-written.
	return fileio.WriteFiles(files)
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
