// Command besim runs ByteExpress scenarios in simulation: `besim run` prints
// a summary and writes JSON and CSV results, `besim validate` checks a
// scenario and explains the fabric parameters it derives, `besim list` shows
// the embedded scenarios; `besim help` lists every command and `besim help
// CMD` describes one. The commands are a hand-written table (cli.go) over
// the standard flag package. Exit status: 0 success, 1 failure, 2 usage.
// The layers below it: docs/ARCHITECTURE.md.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"

	"github.com/besim/besim/experiment"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
	_ "github.com/besim/besim/sweep/simulate" // sweeps and searches run besim's simulator
	_ "github.com/besim/besim/workloads/all"  // every scenario kind
)

func main() {
	mem := os.Getenv(EnvMemProfile)
	if mem == "" {
		// No heap profile asked for: skip the runtime's sampling of
		// allocations (a stack walk every 512 KiB allocated, about 0.5% of
		// a fat-tree incast's instructions).
		runtime.MemProfileRate = 0
	}
	os.Exit(profiled(os.Getenv(EnvCPUProfile), func() int {
		return heapProfiled(mem, func() int { return run(os.Args[1:], os.Stdout, os.Stderr) })
	}))
}

// EnvMemProfile names a file to write a pprof heap profile to when the
// command ends (`go tool pprof -sample_index=inuse_space besim FILE`: the
// Go heap at the last garbage collection, usually late in the run;
// alloc_space: everything allocated up to that collection, not after it).
// It samples one allocation per 512 KiB unless GODEBUG=memprofilerate=1
// asks for every one. Memory outside the Go heap (bemalloc's registered
// blocks) is not in it.
const EnvMemProfile = "BESIM_MEMPROFILE"

// heapProfiled runs f and then, if file is set, writes the heap profile to
// it; a profile that cannot be written fails the command (exit 1).
func heapProfiled(file string, f func() int) int {
	rc := f()
	if file == "" {
		return rc
	}
	w, err := os.Create(file)
	if err == nil {
		err = pprof.Lookup("heap").WriteTo(w, 0)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "besim: $%s: %v\n", EnvMemProfile, err)
		return 1
	}
	return rc
}

// EnvCPUProfile names a file to write a pprof CPU profile of the whole
// command to (`go tool pprof besim FILE`); unset, nothing is profiled.
const EnvCPUProfile = "BESIM_CPUPROFILE"

func profiled(file string, f func() int) int {
	if file == "" {
		return f()
	}
	w, err := os.Create(file)
	if err == nil {
		err = pprof.StartCPUProfile(w)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "besim: $%s: %v\n", EnvCPUProfile, err)
		return 1
	}
	rc := f()
	pprof.StopCPUProfile()
	if err := w.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "besim: $%s: %v\n", EnvCPUProfile, err)
		return 1
	}
	return rc
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageText())
		return 2
	}
	var err error
	switch args[0] {
	case "-h", "--help", "-help", "help":
		return cmdHelp(args[1:], stdout, stderr)
	case "--version", "-version":
		err = cmdVersion(nil, stdout, stderr)
	default:
		c := lookup(args[0])
		if c == nil || c.run == nil {
			unknown(args[0], stderr)
			return 2
		}
		err = c.run(args[1:], stdout, stderr)
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	}
	fmt.Fprintln(stderr, "besim:", err)
	if errors.As(err, new(interrupted)) {
		return ExitInterrupted
	}
	return 1
}

var errUsage = errors.New("usage")

// newFlags is the flag set of a command: -h and --help print the command's
// help (description, flags as --flag, example) on stdout; a flag error
// prints the usage line on stderr.
func newFlags(name string, stdout, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		c := lookup(name)
		fmt.Fprintf(stderr, "usage: besim %s [flags] %s\nrun 'besim help %s' for its flags and an example\n", name, c.args, name)
	}
	helpOut[fs] = stdout
	return fs
}

// helpOut is where each flag set's --help goes.
var helpOut = map[*flag.FlagSet]io.Writer{}

func parse(fs *flag.FlagSet, args []string) error {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "-h" || a == "--help" || a == "-help" {
			if capture != nil {
				capture(fs)
			} else if c := lookup(fs.Name()); c != nil {
				help(helpOut[fs], c, fs)
			}
			delete(helpOut, fs)
			return flag.ErrHelp
		}
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage // flag printed the error and the usage line
	}
	return nil
}

// memoryFlag adds --memory-limit to fs; apply sets the limit Build checks
// (the flag, else $BESIM_MEMORY_LIMIT, else 3/4 of physical memory).
func memoryFlag(fs *flag.FlagSet) (apply func() error) {
	v := fs.String("memory-limit", "", "refuse a run whose memory estimate exceeds this `SIZE` (e.g. 8GiB; 0: no limit; default $"+experiment.EnvMemoryLimit+", else 3/4 of physical memory)")
	return func() error {
		src, what := *v, "--memory-limit"
		if src == "" {
			src, what = os.Getenv(experiment.EnvMemoryLimit), "$"+experiment.EnvMemoryLimit
		}
		if src == "" {
			experiment.SetMemoryLimit(experiment.DefaultMemoryLimit())
			return nil
		}
		b, err := experiment.ParseMemoryLimit(src)
		if err != nil {
			return fmt.Errorf("%s: %v", what, err)
		}
		experiment.SetMemoryLimit(b)
		return nil
	}
}

func load(fs *flag.FlagSet, pos []string, seed *uint64, sets []string, allowDefault bool) (*scenarios.Scenario, error) {
	name := scenarios.Default
	switch len(pos) {
	case 0:
		if !allowDefault {
			fs.Usage()
			return nil, errUsage
		}
	case 1:
		name = pos[0]
	default:
		fs.Usage()
		return nil, errUsage
	}
	s, err := loadWith(name, sets)
	if err != nil {
		return nil, err
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "seed" {
			s.Seed = *seed
		}
	})
	return s, nil
}

// stdin is where a scenario named "-" is read from.
var stdin io.Reader = os.Stdin

// loadScenario is scenarios.Load, with "-" for standard input.
func loadScenario(name string) (*scenarios.Scenario, error) {
	if name != "-" {
		return scenarios.Load(name)
	}
	data, err := io.ReadAll(io.LimitReader(stdin, 1<<20+1))
	if err != nil {
		return nil, err
	}
	if len(data) == 0 {
		return nil, errNoStdin
	}
	return scenarios.Parse("<stdin>", data)
}

func cmdRun(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("run", stdout, stderr)
	seed := fs.Uint64("seed", 0, "override the scenario's random seed")
	var sets multiFlag
	fs.Var(&sets, "set", "override one key: `KEY=VALUE` (the sweep's key syntax, e.g. fabric.switch.buffer=2MiB; repeatable)")
	out := fs.String("out", "", "output folder (default: the scenario's outputs.dir, else out/NAME)")
	quiet := fs.Bool("q", false, "do not print the summary (nor progress on a terminal)")
	progress := fs.Bool("progress", false, "print progress to stderr every 2s of wall time (virtual time reached, events/s,\ntime left); the default when stderr is a terminal, unless -q")
	memLimit := memoryFlag(fs)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if err := memLimit(); err != nil {
		return err
	}
	s, err := load(fs, pos, seed, sets, true)
	if err != nil {
		return err
	}
	x, err := experiment.Build(s)
	if err != nil {
		return err
	}
	term := isTerminal(stderr) && os.Getenv("CI") == ""
	stopProgress := func() {}
	if *progress || term && !*quiet {
		// A flow scenario ends at its duration; a workload sets up and
		// warms up first, a benchmark runs many kernels: no known end.
		var end sim.Time
		if s.Workload == nil && s.Benchmark == nil {
			end = s.Duration.Time()
		}
		stopProgress = startProgress(stderr, end, term)
	}
	res, runErr := x.Run()
	stopProgress()
	if res == nil {
		return runErr
	}
	timing := res.Timing
	res.Timing = nil // files and summary stay byte-identical across runs
	dir := *out
	if dir == "" {
		dir = s.Outputs.Dir
	}
	if dir == "" {
		dir = filepath.Join("out", s.Name)
	}
	files, err := experiment.Write(res, dir, s.Outputs)
	if err != nil {
		return err
	}
	if !*quiet {
		if err := res.WriteSummary(stdout); err != nil {
			return err
		}
	}
	for _, f := range files {
		fmt.Fprintln(stderr, "wrote", f)
	}
	if zero := res.NothingCompleted(); zero != nil {
		fmt.Fprintf(stderr, "warning: nothing completed in the measured interval (%s: 0); every figure above describes an empty interval: lengthen duration (or shorten warmup)\n",
			strings.Join(zero, ", "))
	}
	if timing.Events == 0 {
		// Benchmarks run many small kernels and do not count their events.
		fmt.Fprintf(stderr, "simulated %s in %.2fs wall (events not counted by this kind)\n", res.Duration, timing.WallSeconds)
	} else {
		fmt.Fprintf(stderr, "simulated %s in %.2fs wall (%d events, %.2fM events/s)\n",
			res.Duration, timing.WallSeconds, timing.Events, timing.EventsPerSecond/1e6)
	}
	// A failed run still writes its result (with the note saying why)
	// and then exits 1.
	return runErr
}

func cmdValidate(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("validate", stdout, stderr)
	printIt := fs.Bool("print", false, "print the normalised scenario (every default filled in) instead of the explanation")
	var sets multiFlag
	fs.Var(&sets, "set", "override one key first: `KEY=VALUE` (repeatable)")
	memLimit := memoryFlag(fs)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if err := memLimit(); err != nil {
		return err
	}
	s, err := load(fs, pos, new(uint64), sets, false)
	if err != nil {
		return err
	}
	x, err := experiment.Build(s)
	if err != nil {
		return err
	}
	if *printIt {
		y, err := s.YAML()
		if err != nil {
			return err
		}
		_, err = stdout.Write(y)
		return err
	}
	if err := x.Explain(stdout); err != nil {
		return err
	}
	limit := "none"
	if l := experiment.MemoryLimit(); l > 0 {
		limit = experiment.FormatBytes(l)
	}
	_, err = fmt.Fprintf(stdout, "memory: %s; limit %s\n", experiment.EstimateMemory(s), limit)
	return err
}

func cmdList(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("list", stdout, stderr)
	if err := parse(fs, args); err != nil {
		return err
	}
	for _, in := range scenarios.List() {
		fmt.Fprintf(stdout, "%-20s %s\n", in.Name, in.Description)
	}
	return nil
}
