package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"sort"
	"strings"

	"github.com/besim/besim/experiment"
	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sweep"
)

// command is one subcommand: its help and its function. The dispatcher is
// hand-written rather than a CLI library (cobra, urfave/cli): the standard
// flag package already parses every flag besim has, and the conventions
// wanted (help on stdout for -h, --help and `help CMD`; flags shown as
// --flag; suggestions for mistyped commands; exit codes 0, 1, 2) take about
// a hundred lines here, against a dependency tree and a second flag syntax.
type command struct {
	name    string
	args    string // positional arguments, for the usage line
	short   string // one line, for the command list
	long    string // what it does, for `besim help NAME`
	example string
	run     func(args []string, stdout, stderr io.Writer) error
}

var commands []*command

func init() {
	commands = []*command{
		{name: "run", args: "[SCENARIO]", short: "simulate a scenario (a file or an embedded name; default " + scenarios.Default + ")",
			long: "Simulates one scenario and prints its summary; writes result.json (with provenance: format, tool version,\n" +
				"revision, scenario digest, resolved scenario) and one CSV per table into the output folder.\n" +
				"--set overrides one key of the scenario (the sweep's KEY=VALUE syntax, one value). On a terminal (or\n" +
				"with --progress) a line on stderr every 2s says how far the run is: virtual time, events/s, time left.",
			example: "besim run --seed 7 --set fabric.switch.buffer=2MiB --out /tmp/x incast",
			run:     cmdRun},
		{name: "validate", args: "SCENARIO|-", short: "check a scenario and explain derived thresholds",
			long: "Loads a scenario (a file, an embedded name, or - for standard input) with every strict check and\n" +
				"explains what the runner derives (PFC thresholds, headroom, BDP). --print writes the normalised\n" +
				"scenario instead: every default filled in, in the file format, loadable again.",
			example: "besim validate incast\nbesim show incast | besim validate --print -",
			run:     cmdValidate},
		{name: "list", short: "list embedded scenarios", long: "Lists the embedded scenarios with their descriptions.",
			example: "besim list", run: cmdList},
		{name: "show", args: "SCENARIO", short: "print an embedded scenario (a template to copy and edit)",
			long:    "Prints the YAML text of an embedded scenario as it is embedded (template is another name for it).",
			example: "besim show incast > my.yaml", run: cmdShow},
		{name: "metrics", args: "SCENARIO", short: "list the metrics and tables a scenario's run writes",
			long: "Runs the scenario (nothing is written) and lists the metrics its result.json holds, with units,\n" +
				"and its tables with their columns. --set shortens a long scenario (--set duration=1ms); the names\n" +
				"do not depend on the duration unless nothing completes.",
			example: "besim metrics incast", run: cmdMetrics},
		{name: "sweep", args: "SCENARIO --set KEY=V1,V2 [--set ...] | --search KEY=LO..HI --until METRIC>X",
			short: "run a parameter sweep or a bisection search",
			long: "Runs the cross product of the --set values (in parallel, output identical to a serial run; --shard\n" +
				"i/n for batch jobs, combined with besim merge; --shard auto reads a Slurm, Grid Engine, PBS, LSF or\n" +
				"Kubernetes array job's variables), or bisects the largest KEY before METRIC>X holds. --replications N\n" +
				"runs each point N times (seeds S..S+N-1) and pools their latency histograms (table replications).\n" +
				"Writes FILE.json, and the table as tidy CSV (one column per swept key) and Markdown beside it.",
			example: "besim sweep incast --set fabric.switch.buffer=1MiB,4MiB --metrics pfc/frames_tx -o /tmp/s.json",
			run:     cmdSweep},
		{name: "merge", args: "SHARD.json... -o OUT.json", short: "merge sharded sweep results into the full one",
			long:    "Merges the partial files of a sharded sweep; the result is byte-identical to an unsharded run.",
			example: "besim merge out/incast/sweep-shard-*.json -o /tmp/s.json", run: cmdMerge},
		{name: "plot", args: "RESULT.json -o OUT.png|OUT.svg|OUT.pdf", short: "plot a sweep (--x --y), time series, CDFs or bars",
			long: "Plots a result: a sweep or search (--x KEY --y METRIC, --y repeatable: one line per metric), a run's\n" +
				"table (--table NAME --x PART --y COLUMN), time series, CDFs of histograms, or bars. The format follows\n" +
				"the file's extension. The y axis starts at zero when no value is negative (--ymin, --log-y change it);\n" +
				"--ref and --ref-file add reference points, e.g. a paper's values.",
			example: "besim plot /tmp/s.json --x fabric.switch.buffer --y pfc/frames_tx --y pfc/host_paused -o /tmp/s.pdf\n" +
				"besim plot results/table4/search.json --ref 'paper=4KiB:1218,8KiB:567,16KiB:273,none:63' -o /tmp/t4.svg",
			run: cmdPlot},
		{name: "compare", args: "A.json B.json", short: "put the metrics of two results side by side",
			long: "Sets the metrics two results share side by side with their ratio (a simulated run and a berun\n" +
				"hardware run, or two versions). Reads this format and version 1 files.",
			example: "besim compare a/result.json b/result.json", run: cmdCompare},
		{name: "schema", short: "print the JSON Schema of scenario files (for editors)",
			long: "Prints a JSON Schema (draft 2020-12) of the scenario format, generated from the Go types: every key,\n" +
				"its type, the values of enumerations. It is committed as scenarios/schema.json; point an editor's\n" +
				"YAML support at it (a first line `# yaml-language-server: $schema=PATH/schema.json`). Structural\n" +
				"only: `besim validate` checks the rest.",
			example: "besim schema > scenarios/schema.json", run: cmdSchema},
		{name: "completion", args: "bash|zsh|fish", short: "print a shell completion script",
			long: "Prints a completion script for bash, zsh or fish: subcommands, their flags, embedded scenario names,\n" +
				"and the scenario keys after --set. It is generated from this binary (print it again after an upgrade).",
			example: "besim completion bash > ~/.local/share/bash-completion/completions/besim\n" +
				"besim completion fish > ~/.config/fish/completions/besim.fish\nsource <(besim completion zsh)",
			run: cmdCompletion},
		{name: "version", short: "print the version and VCS revision of this build",
			long:    "Prints the module version and VCS revision from the build information (unknown under go run).",
			example: "besim version", run: cmdVersion},
		{name: "help", args: "[COMMAND]", short: "help on a command", long: "Prints the help of a command, or the command list.",
			example: "besim help run", run: nil},
	}
}

var aliases = map[string]string{"template": "show"}

func lookup(name string) *command {
	if a, ok := aliases[name]; ok {
		name = a
	}
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

func usageText() string {
	var b strings.Builder
	b.WriteString("besim: discrete-event simulator of the ByteExpress RDMA stack\n\nusage: besim COMMAND [flags] [arguments]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-9s %s\n", c.name, c.short)
	}
	b.WriteString("\n`besim help COMMAND` or `besim COMMAND --help` shows a command's flags and an example.\n" +
		"Flags may be written -flag or --flag, before or after the arguments.\n" +
		"Exit status: 0 success; 1 the command failed (bad scenario, failed run, a sweep with a failed point unless --keep-going); 2 usage error; 130 interrupted (a sweep or search writes its finished points, marked partial, first).\n")
	return b.String()
}

// help writes a command's help: usage line, description, flags, example.
func help(w io.Writer, c *command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: besim %s [flags] %s\n\n%s\n", c.name, c.args, c.long)
	if fs == nil {
		fs = flagsOf(c)
	}
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprintln(w, "\nflags:")
		printFlags(w, fs)
	}
	fmt.Fprintf(w, "\nexample:\n")
	for _, l := range strings.Split(c.example, "\n") {
		fmt.Fprintf(w, "  %s\n", l)
	}
}

// flagsOf returns c's flag set, by running c with --help into a discarded
// writer (each command defines its flags where it parses them).
func flagsOf(c *command) *flag.FlagSet {
	var got *flag.FlagSet
	capture = func(fs *flag.FlagSet) { got = fs }
	defer func() { capture = nil }()
	if c.run != nil {
		c.run([]string{"--help"}, io.Discard, io.Discard)
	}
	if got == nil {
		got = flag.NewFlagSet(c.name, flag.ContinueOnError)
	}
	return got
}

// capture, when set, receives a command's flag set instead of printing its
// help (flagsOf).
var capture func(*flag.FlagSet)

// printFlags is flag.PrintDefaults with --name, the form README uses.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if len(f.Name) == 1 {
			line = "  -" + f.Name
		}
		if name != "" {
			line += " " + name
		}
		line += "\n    \t" + strings.ReplaceAll(usage, "\n", "\n    \t")
		if d := f.DefValue; d != "" && d != "0" && d != "false" {
			line += fmt.Sprintf(" (default %s)", d)
		}
		fmt.Fprintln(w, line)
	})
}

// suggest returns the commands within edit distance 2 of name.
func suggest(name string) []string {
	var out []string
	var names []string
	for _, c := range commands {
		names = append(names, c.name)
	}
	for a := range aliases {
		names = append(names, a)
	}
	sort.Strings(names)
	for _, n := range names {
		if levenshtein(name, n) <= 2 || (len(name) >= 3 && strings.HasPrefix(n, name)) {
			out = append(out, n)
		}
	}
	return out
}

func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

func cmdHelp(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stdout, usageText())
		return 0
	}
	c := lookup(args[0])
	if c == nil {
		unknown(args[0], stderr)
		return 2
	}
	help(stdout, c, nil)
	return 0
}

func unknown(name string, stderr io.Writer) {
	fmt.Fprintf(stderr, "besim: unknown command %q", name)
	if s := suggest(name); len(s) > 0 {
		fmt.Fprintf(stderr, "; did you mean %s?", strings.Join(s, " or "))
	}
	fmt.Fprintln(stderr, "\nrun 'besim help' for the list of commands")
}

func cmdVersion(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("version", stdout, stderr)
	if err := parse(fs, args); err != nil {
		return err
	}
	v, r := report.Build()
	fmt.Fprintf(stdout, "besim %s (revision %s, %s, result format %s)\n", v, r, runtime.Version(), report.Format)
	return nil
}

func cmdShow(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("show", stdout, stderr)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return errUsage
	}
	b, err := scenarios.Builtin(pos[0])
	if err != nil {
		return err
	}
	_, err = stdout.Write(b)
	return err
}

func cmdMetrics(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("metrics", stdout, stderr)
	var sets multiFlag
	fs.Var(&sets, "set", "override a key for this run: `KEY=VALUE` (repeatable)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return errUsage
	}
	s, err := loadWith(pos[0], sets)
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
	fmt.Fprintf(stdout, "metrics of %s (result.json \"metrics\"):\n", s.Name)
	for _, m := range res.Metrics {
		u := m.Unit
		if u == "" {
			u = "-"
		}
		fmt.Fprintf(stdout, "  %-40s %s\n", m.Name, u)
	}
	fmt.Fprintln(stdout, "\ntables (result.json \"tables\", and NAME.csv):")
	for _, t := range res.Tables {
		var cols []string
		for _, c := range t.Columns {
			cols = append(cols, report.CSVHeader(c))
		}
		fmt.Fprintf(stdout, "  %-20s one row per %s: %s\n", t.Name, t.KeyName, strings.Join(cols, ", "))
	}
	if len(res.Series) > 0 {
		fmt.Fprintln(stdout, "\ntime series (result.json \"series\"):")
		for _, se := range res.Series {
			fmt.Fprintf(stdout, "  %-40s %s\n", se.Name, se.Unit)
		}
	}
	return runErr
}

// loadWith loads a scenario with --set KEY=VALUE overrides (the sweep's
// override code: the YAML is edited and loaded again, so every check
// applies and errors name the override).
func loadWith(name string, sets []string) (*scenarios.Scenario, error) {
	if len(sets) == 0 {
		return loadScenario(name)
	}
	b, err := sweep.Load(name)
	if err != nil {
		return nil, err
	}
	var ov []sweep.Override
	for _, set := range sets {
		k, v, ok := strings.Cut(set, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--set %s: want KEY=VALUE", set)
		}
		if err := sweep.ValidKey(k); err != nil {
			return nil, fmt.Errorf("--set %s: %w", set, err)
		}
		ov = append(ov, sweep.Override{Key: k, Value: v})
	}
	return b.Apply(ov)
}

var errNoStdin = errors.New("-: no scenario on standard input")
