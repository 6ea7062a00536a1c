// Command besim runs ByteExpress scenarios in simulation: `besim run` prints
// a summary and writes JSON and CSV results, `besim validate` checks a
// scenario and explains the fabric parameters it derives, `besim list` shows
// the embedded scenarios.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/besim/besim/experiment"
	"github.com/besim/besim/scenarios"
	_ "github.com/besim/besim/workloads/all" // every scenario kind
)

const usage = `besim: discrete-event simulator of the ByteExpress RDMA stack

usage:
  besim run [flags] [SCENARIO]     simulate a scenario (file or embedded name; default %q)
  besim validate [flags] SCENARIO  check a scenario and explain derived thresholds
  besim list                       list embedded scenarios
  besim sweep [flags] SCENARIO --set KEY=V1,V2 [--set ...]
                                   run a parameter sweep (parallel; --shard i/n for batch jobs)
  besim sweep [flags] SCENARIO --search KEY=LO..HI --until METRIC>X [--set ...]
                                   bisect the largest KEY before METRIC>X holds
  besim merge SHARD.json... -o OUT.json
                                   merge sharded sweep results into the full one
  besim plot [flags] RESULT.json -o OUT.png|OUT.svg
                                   plot a sweep (--x --y), time series, CDFs or bars
  besim compare [--md] A.json B.json
                                   put the metrics of two results side by side
  besim COMMAND -h                 flags of a command

exit status: 0 success; 1 error (a simulation that failed, a sweep with a
failed point unless --keep-going); 2 usage; 130 interrupted (a sweep or
search writes its finished points, marked partial, first)
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintf(stderr, usage, scenarios.Default)
		return 2
	}
	var err error
	switch args[0] {
	case "run":
		err = cmdRun(args[1:], stdout, stderr)
	case "validate":
		err = cmdValidate(args[1:], stdout, stderr)
	case "list":
		err = cmdList(args[1:], stdout, stderr)
	case "sweep":
		err = cmdSweep(args[1:], stdout, stderr)
	case "merge":
		err = cmdMerge(args[1:], stdout, stderr)
	case "plot":
		err = cmdPlot(args[1:], stdout, stderr)
	case "compare":
		err = cmdCompare(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprintf(stdout, usage, scenarios.Default)
		return 0
	default:
		fmt.Fprintf(stderr, "besim: unknown command %q\n", args[0])
		fmt.Fprintf(stderr, usage, scenarios.Default)
		return 2
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

func newFlags(name, args string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: besim %s [flags] %s\n", name, args)
		fs.PrintDefaults()
	}
	return fs
}

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	return nil
}

func load(fs *flag.FlagSet, pos []string, seed *uint64, allowDefault bool) (*scenarios.Scenario, error) {
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
	s, err := scenarios.Load(name)
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

func cmdRun(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("run", "[SCENARIO]", stderr)
	seed := fs.Uint64("seed", 0, "override the scenario's random seed")
	out := fs.String("out", "", "output folder (default: the scenario's outputs.dir, else out/NAME)")
	quiet := fs.Bool("q", false, "do not print the summary")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	s, err := load(fs, pos, seed, true)
	if err != nil {
		return err
	}
	x, err := experiment.Build(s)
	if err != nil {
		return err
	}
	res, runErr := x.Run()
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
	fmt.Fprintf(stderr, "simulated %s in %.2fs wall (%d events, %.2fM events/s)\n",
		res.Duration, timing.WallSeconds, timing.Events, timing.EventsPerSecond/1e6)
	// A failed run still writes its result (with the note saying why)
	// and then exits 1.
	return runErr
}

func cmdValidate(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("validate", "SCENARIO", stderr)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	s, err := load(fs, pos, new(uint64), false)
	if err != nil {
		return err
	}
	x, err := experiment.Build(s)
	if err != nil {
		return err
	}
	return x.Explain(stdout)
}

func cmdList(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("list", "", stderr)
	if err := parse(fs, args); err != nil {
		return err
	}
	for _, in := range scenarios.List() {
		fmt.Fprintf(stdout, "%-20s %s\n", in.Name, in.Description)
	}
	return nil
}
