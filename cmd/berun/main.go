// Command berun replays runs on real hosts and compares them with besim's
// simulations: an agent on every host, a controller that drives them.
//
//	berun agent --listen ADDR [--token-file F] [--name N]
//	berun run PLAN --hosts HOSTS.yaml [--out DIR] [--token-file F]
//	berun selftest [--device NAME] [--port N] [--gid-index N]
//	berun roles
//
// Agents and controller share a token (--token-file or $BERUN_TOKEN) that
// never crosses the network (HMAC challenge-response, package berun/wire).
// Data moves over kernel TCP (the tcp roles: the paper's §8 baseline) and,
// built with -tags rdma, RDMA verbs through verbs/ibv (selftest, the
// parameter-server, incast and failover roles with --transport verbs: the
// ByteExpress core on the host's device, and the perftest roles, which
// are verbs only). See berun/plan for the two input
// files and berun/controller for the result file.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/besim/besim/berun/agent"
	"github.com/besim/besim/berun/controller"
	"github.com/besim/besim/berun/plan"
	"github.com/besim/besim/berun/role"
	"github.com/besim/besim/berun/wire"
	"github.com/besim/besim/cmd/berun/internal/selftest"
	"github.com/besim/besim/internal/fileio"
	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sweep"
	"github.com/besim/besim/verbs/ibv"
)

const usage = `berun: replay runs on real hosts (agents) from a controller, and check RDMA hardware.

Commands:
  agent     run the host agent:  berun agent --listen ADDR [--token-file F]
  run       drive a run:         berun run PLAN --hosts HOSTS.yaml [--out DIR]
  selftest  loopback check of an RDMA device (needs -tags rdma):  berun selftest [--device NAME]
  roles     list the roles a plan may use and their parameters

The token shared by controller and agents comes from --token-file or $BERUN_TOKEN
(at least 16 bytes; e.g. head -c 32 /dev/urandom | base64 > berun.token; chmod 600).
Run "berun COMMAND --help" for the flags of a command.
`

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "agent":
		return cmdAgent(args[1:], stdout, stderr)
	case "run":
		return cmdRun(args[1:], stdout, stderr)
	case "selftest":
		return cmdSelftest(args[1:], stdout, stderr)
	case "roles":
		return cmdRoles(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "berun: unknown command %q\n\n%s", args[0], usage)
	return 2
}

func newFlags(name, synopsis, about string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("berun "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: berun %s\n\n%s\nFlags:\n", synopsis, about)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses flags anywhere among the arguments and returns the
// positional ones. -1 means --help was asked (exit 0), -2 a usage error.
func parse(fs *flag.FlagSet, args []string) ([]string, int) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, -1
			}
			return nil, -2
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, 0
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func helpCode(c int) int {
	if c == -1 {
		return 0
	}
	return 2
}

func loadToken(file string, stderr io.Writer) ([]byte, bool) {
	t, err := wire.LoadToken(file)
	if err != nil {
		fmt.Fprintf(stderr, "berun: %v\n", err)
		return nil, false
	}
	if t.Warning != "" {
		fmt.Fprintf(stderr, "berun: warning: %s\n", t.Warning)
	}
	return t.Secret, true
}

func cmdAgent(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("agent", "agent --listen ADDR [--token-file F] [flags]",
		`Runs the host agent: listens on ADDR only, accepts controllers that hold the shared
token, runs the roles they assign and uploads results. Logs go to stderr; the
bound address is printed on stdout ("listening ADDR") once the agent is ready.`, stderr)
	listen := fs.String("listen", "", "control address to bind, IP:port (required; port 0 picks one)")
	tokenFile := fs.String("token-file", "", "file holding the shared token (default: $BERUN_TOKEN)")
	name := fs.String("name", "", "agent name in logs and results (default: the host name)")
	any := fs.Bool("listen-any", false, "allow a wildcard --listen address and wildcard role binds (every interface)")
	sysroot := fs.String("sysroot", "", "read /sys below this directory instead (testing)")
	idle := fs.Duration("idle-timeout", 10*time.Second, "drop a controller silent for this long")
	pos, code := parse(fs, args)
	if code != 0 || len(pos) > 0 || *listen == "" {
		if code == 0 {
			fmt.Fprintln(stderr, "berun agent: --listen ADDR is required and takes no other arguments")
			fs.Usage()
		}
		return helpCode(code)
	}
	tok, ok := loadToken(*tokenFile, stderr)
	if !ok {
		return 1
	}
	lg := log.New(stderr, "berun agent: ", log.LstdFlags|log.Lmicroseconds)
	a, err := agent.New(agent.Config{Listen: *listen, AllowWildcard: *any, Token: tok, Name: *name, IdleTimeout: *idle,
		Logf: lg.Printf, Counters: countersRoot(*sysroot)})
	if err != nil {
		fmt.Fprintf(stderr, "berun %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(stdout, "listening %s\n", a.Addr())
	lg.Printf("listening on %s (token from %s)", a.Addr(), tokenSource(*tokenFile))
	if err := a.Serve(ctx); err != nil {
		lg.Printf("%v", err)
		return 1
	}
	lg.Printf("stopped")
	return 0
}

func tokenSource(f string) string {
	if f != "" {
		return f
	}
	return "$" + wire.EnvToken
}

func cmdRun(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("run", "run PLAN --hosts HOSTS.yaml [--out DIR] [--token-file F] [flags]",
		`Connects to the agent of every host with roles in PLAN, pushes the run, starts all
hosts at one instant, waits for the duration (plus grace) and writes one JSON
result file, DIR/NAME.RUNID.json, and the same run in besim's result format,
DIR/NAME.RUNID.report.json (besim compare SIM/result.json DIR/NAME.RUNID.report.json). Exit status: 0 all hosts and roles ok,
3 partial (some host failed or some role reported an error; the others'
results are kept), 1 failed (nothing ran), 2 usage.

HOSTS.yaml:
  hosts:
    - {name: h1, control: "10.0.0.1:7070", data: 192.168.1.1, netdevs: [eth2]}
    - {name: h2, control: "10.0.0.2:7070", data: 192.168.1.2}

PLAN is a besim scenario with a ps-cluster, incast-pull or failover workload
(the file besim simulates; servers, rankers, trainers, workers and clients go
round-robin over the hosts, or over those whose ps_roles: [server, ranker,
trainer, worker, client] allow them; an incast's victim and bandwidth flows
become tcp-bulk pairs; a failover's host crash closes that server's endpoint,
other faults are refused; --duration sets the load time), or a perftest benchmark (table2: perftest-client on the
first host, perftest-server on the second, always over verbs, each transport at
the hosts' link rate and MTU; --duration sets each transport's measured interval),
or a fragsize benchmark (fig10: fragsize-sender on the first host, fragsize-receiver
on the second, over verbs, one slot per fragment size; --duration sets each
slot's measured interval), or a hol benchmark (fig13: hol-sender on the first
host, hol-receiver on the second, over verbs, one slot per large-flow count,
fragmented and whole; --duration sets each slot's measured interval), or a
msgrate benchmark (fig11: msgrate-sender's I/O threads on the first host,
msgrate-target on the second, over verbs, one slot per QP count and
thread-domain setting; fig11-core, through: core, the same with
msgrate-core-sender's endpoint, one engine per QP, and msgrate-core-target
answering), or a mrcache benchmark (mr-cache: mrcache-sender's I/O thread on
the first host, mrcache-target on the second, over verbs, one slot per
registration; the NIC's cache miss rates are not measured), or a pingpong benchmark (fig8: pingpong-sender on the
first host, pingpong-server on the second, over kernel TCP or with --transport
verbs the ByteExpress core, one slot per message size), or a peak benchmark
(fig9: over verbs, ByteExpress's sender and receiver, then the perftest client
and server, on the first and second host; --duration sets each series'
measured interval), or a flow scenario (its flows section: each flow a flow-sender on its source host
and a flow-receiver on its destination, scenario host i being the hosts
file's i-th host, with the flow's start, size and rate, over kernel TCP with
either --transport; scenarios with faults are refused), or a berun role plan.
With --search KEY=LO..HI --until 'METRIC OP NUMBER' a besim scenario is
searched as besim search does (the Table 4 search: --search
workload.servers=8..128 --until 'pfc/frames_tx>0'): a bisection with one run
on the hosts per probe, the predicate read from the run's report (the NIC
counters' pfc/frames_tx, the workload's metrics), each run's result file in
--out and besim's search table in --out/NAME.search.json.
A role plan:
  name: tcp-baseline
  duration: 10s
  roles:
    - {id: sink, role: tcp-bulk, host: h2, params: {mode: sink}}
    - {id: send, role: tcp-bulk, host: h1, peers: [sink], params: {mode: send, message_size: 1MiB}}
    - {id: srv,  role: tcp-echo, host: h2, params: {mode: server}}
    - {id: cli,  role: tcp-echo, host: h1, peers: [srv], params: {mode: client, outstanding: 8}}
`, stderr)
	hostsFile := fs.String("hosts", "", "hosts file (required)")
	out := fs.String("out", ".", "directory for the result file")
	tokenFile := fs.String("token-file", "", "file holding the shared token (default: $BERUN_TOKEN)")
	dial := fs.Duration("dial-timeout", 5*time.Second, "bound on connecting to each agent")
	liveness := fs.Duration("liveness", 3*time.Second, "an agent silent this long is failed")
	startDelay := fs.Duration("start-delay", time.Second, "lead time of the synchronized start")
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	dur := fs.Duration("duration", 0, "for a besim scenario: load time on the hosts (default: the scenario's duration)")
	transport := fs.String("transport", "tcp", "for a besim scenario: tcp (kernel TCP) or verbs")
	search := fs.String("search", "", "for a besim scenario: KEY=LO..HI, bisect KEY (as besim search) with one run per probe")
	until := fs.String("until", "", "with --search: the predicate on the run's report, METRIC OP NUMBER (e.g. pfc/frames_tx>0)")
	pos, code := parse(fs, args)
	if code != 0 {
		return helpCode(code)
	}
	if len(pos) != 1 || *hostsFile == "" {
		fmt.Fprintln(stderr, "berun run: want exactly one PLAN and --hosts HOSTS.yaml")
		fs.Usage()
		return 2
	}
	hs, err := loadHosts(*hostsFile)
	if err != nil {
		fmt.Fprintf(stderr, "berun run: %v\n", err)
		return 2
	}
	if *search != "" || *until != "" {
		return runSearch(pos[0], hs, *search, *until, *dur, *transport, *tokenFile, *out, *quiet, controller.Config{DialTimeout: *dial,
			Liveness: *liveness, StartDelay: *startDelay}, stdout, stderr)
	}
	p, err := loadPlan(pos[0], hs, *dur, *transport)
	if err == nil {
		explicit := false
		fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "transport" })
		err = perftestTransport(p, *transport, explicit)
	}
	if err != nil {
		fmt.Fprintf(stderr, "berun run: %v\n", err)
		return 2
	}
	if _, err := plan.Assign(p, hs); err != nil {
		fmt.Fprintf(stderr, "berun run: %v\n", err)
		return 2
	}
	tok, ok := loadToken(*tokenFile, stderr)
	if !ok {
		return 1
	}
	// Check the output folder before contacting any host: a run whose
	// result cannot be written is a run thrown away.
	if err := fileio.CheckWritable(*out, true); err != nil {
		fmt.Fprintf(stderr, "berun run: --out %s: %v\n", *out, err)
		return 2
	}
	logf := log.New(stderr, "berun run: ", log.Ltime|log.Lmicroseconds).Printf
	if *quiet {
		logf = func(string, ...any) {}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rf, err := controller.Run(ctx, controller.Config{Plan: p, Hosts: hs, Token: tok, DialTimeout: *dial,
		Liveness: *liveness, StartDelay: *startDelay, Logf: logf})
	if err != nil {
		fmt.Fprintf(stderr, "berun run: %v\n", err)
		return 2
	}
	path, err := rf.Write(*out)
	if err != nil {
		// The folder was writable when the run started; keep the
		// result somewhere rather than lose the run.
		fmt.Fprintf(stderr, "berun run: writing the result into %s: %v\n", *out, err)
		path, err = rf.Write(os.TempDir())
		if err != nil {
			fmt.Fprintf(stderr, "berun run: writing the result into %s: %v\n", os.TempDir(), err)
			fmt.Fprint(stdout, controller.Summary(rf))
			return 1
		}
		fmt.Fprintf(stderr, "berun run: the result is in %s instead\n", path)
	}
	fmt.Fprint(stdout, controller.Summary(rf))
	fmt.Fprintf(stdout, "result: %s\n", path)
	rep := controller.Report(rf)
	rpath := strings.TrimSuffix(path, ".json") + ".report.json"
	if err := writeReport(rep, rpath); err != nil {
		fmt.Fprintf(stderr, "berun run: writing the report: %v\n", err)
		return 1
	}
	if len(rep.Tables) > 0 {
		fmt.Fprintln(stdout)
		_ = rep.Tables[0].WriteText(stdout)
	}
	fmt.Fprintf(stdout, "report (besim format, for besim compare): %s\n", rpath)
	switch rf.Status {
	case "ok":
		return 0
	case "partial":
		return 3
	}
	return 1
}

// runSearch is `berun run SCENARIO --search KEY=LO..HI --until PRED`:
// besim's bisection (controller.Search) with one run on the hosts per
// probe, each run's result file written to out as usual, and the search
// result (table "search", besim's format) to out/NAME.search.json.
func runSearch(file string, hs *plan.Hosts, search, until string, dur time.Duration, transport, tokenFile, out string, quiet bool,
	cfg controller.Config, stdout, stderr io.Writer) int {
	fail := func(code int, f string, args ...any) int {
		fmt.Fprintf(stderr, "berun run: "+f+"\n", args...)
		return code
	}
	if search == "" || until == "" {
		return fail(2, "--search and --until go together (e.g. --search workload.servers=8..128 --until 'pfc/frames_tx>0')")
	}
	s, err := sweep.ParseSearch(search)
	if err != nil {
		return fail(2, "%v", err)
	}
	if s.Until, err = sweep.ParsePredicate(until); err != nil {
		return fail(2, "%v", err)
	}
	data, err := fileio.ReadFile(file, plan.MaxFile, "scenario")
	if err != nil {
		return fail(2, "%v", err)
	}
	if !plan.IsScenario(data) {
		return fail(2, "%s: --search needs a besim scenario, not a role plan", file)
	}
	base, err := sweep.NewBase(file, data)
	if err != nil {
		return fail(2, "%v", err)
	}
	// Both ends must map onto the hosts before the first run.
	for _, v := range []int64{s.Lo, s.Hi} {
		sc, err := base.Apply([]sweep.Override{{Key: s.Key, Value: strconv.FormatInt(v, 10) + s.Unit}})
		if err != nil {
			return fail(2, "%v", err)
		}
		y, err := sc.YAML()
		if err == nil {
			_, err = scenarioPlan(file, y, hs, dur, transport)
		}
		if err != nil {
			return fail(2, "--search %s: at %d: %v", search, v, err)
		}
	}
	tok, ok := loadToken(tokenFile, stderr)
	if !ok {
		return 1
	}
	if err := fileio.CheckWritable(out, true); err != nil {
		return fail(2, "--out %s: %v", out, err)
	}
	logf := log.New(stderr, "berun run: ", log.Ltime|log.Lmicroseconds).Printf
	if quiet {
		logf = func(string, ...any) {}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg.Hosts, cfg.Token, cfg.Logf = hs, tok, logf
	r, err := controller.Search(base, s, func(sc *scenarios.Scenario) (*controller.ResultFile, error) {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		y, err := sc.YAML()
		if err != nil {
			return nil, err
		}
		p, err := scenarioPlan(file, y, hs, dur, transport)
		if err == nil {
			_, err = plan.Assign(p, hs)
		}
		if err != nil {
			return nil, err
		}
		c := cfg
		c.Plan = p
		rf, err := controller.Run(ctx, c)
		if err != nil {
			return nil, err
		}
		if path, err := rf.Write(out); err == nil {
			logf("probe %s: %s: %s", s.Key, rf.Status, path)
		}
		return rf, nil
	})
	if r == nil {
		return fail(1, "search: %v", err)
	}
	path := filepath.Join(out, r.Scenario+".search.json")
	if werr := writeReport(r, path); werr != nil {
		return fail(1, "writing the search result: %v", werr)
	}
	if tb, ok := r.Table("search"); ok {
		_ = tb.WriteText(stdout)
	}
	fmt.Fprintf(stdout, "search (besim format): %s\n", path)
	if err != nil {
		return fail(3, "search: %v", err)
	}
	return 0
}

// loadHosts reads a hosts file (a regular file of at most plan.MaxFile
// bytes).
func loadHosts(file string) (*plan.Hosts, error) {
	data, err := fileio.ReadFile(file, plan.MaxFile, "hosts file")
	if err != nil {
		return nil, err
	}
	return plan.ParseHosts(file, data)
}

// loadPlan reads a berun role plan, or maps a besim scenario onto the
// hosts (plan.FromScenario).
func loadPlan(file string, hs *plan.Hosts, dur time.Duration, transport string) (*plan.Plan, error) {
	data, err := fileio.ReadFile(file, plan.MaxFile, "plan or scenario")
	if err != nil {
		return nil, err
	}
	if !plan.IsScenario(data) {
		if dur != 0 || transport != "tcp" {
			return nil, fmt.Errorf("%s: --duration and --transport apply to besim scenarios; a role plan names its roles and duration", file)
		}
		return plan.ParsePlan(file, data)
	}
	if transport != "tcp" && transport != "verbs" {
		return nil, fmt.Errorf("--transport %q: want tcp or verbs", transport)
	}
	return scenarioPlan(file, data, hs, dur, transport)
}

// scenarioPlan maps a besim scenario onto the hosts, its workload roles
// over the transport.
func scenarioPlan(file string, data []byte, hs *plan.Hosts, dur time.Duration, transport string) (*plan.Plan, error) {
	p, err := plan.FromScenario(file, data, hs, dur)
	if err != nil {
		return nil, err
	}
	if transport == "tcp" {
		// The ps roles run the RPC layer over the core only (role ps).
		if s, err := scenarios.Parse(file, data); err == nil && s.Workload != nil && s.Workload.Kind == scenarios.PSCluster && s.Workload.RPCOn() {
			return nil, fmt.Errorf("%s: workload.rpc: the ps roles run the RPC layer (byteexpress/rpc) over the ByteExpress core on verbs only; use --transport verbs (or rpc: false for kernel TCP)", file)
		}
	}
	if transport == "verbs" {
		// The workload's roles run the ByteExpress core on each host's RDMA
		// device (agents built with -tags rdma; without a device they
		// refuse); the victim and bandwidth flows stay kernel TCP.
		for i := range p.Roles {
			if r := p.Roles[i].Role; strings.HasPrefix(r, "ps-") || strings.HasPrefix(r, "incast-") || strings.HasPrefix(r, "failover-") || strings.HasPrefix(r, "pingpong-") {
				p.Roles[i].Params["transport"] = "verbs"
			}
		}
	}
	return p, nil
}

// perftestTransport refuses an explicit --transport tcp for a perftest,
// fragsize, hol, msgrate or mrcache benchmark: their roles measure the RDMA device (RC and
// UD, or the core's fragments) and have no kernel-TCP form (the flag's default,
// and verbs, are accepted).
func perftestTransport(p *plan.Plan, transport string, explicit bool) error {
	if !explicit || transport != "tcp" {
		return nil
	}
	for _, r := range p.Roles {
		if strings.HasPrefix(r.Role, "perftest-") {
			return fmt.Errorf("%s: --transport tcp: a perftest benchmark measures the RDMA device's RC and UD transports and always runs over verbs (drop the flag)", p.File)
		}
		if strings.HasPrefix(r.Role, "fragsize-") {
			return fmt.Errorf("%s: --transport tcp: a fragsize benchmark measures the ByteExpress core's fragments on the RDMA device and always runs over verbs (drop the flag)", p.File)
		}
		if strings.HasPrefix(r.Role, "msgrate-") {
			return fmt.Errorf("%s: --transport tcp: a msgrate benchmark measures the RDMA device's doorbells (RDMA WRITEs on RC QPs) and always runs over verbs (drop the flag)", p.File)
		}
		if strings.HasPrefix(r.Role, "peak-") {
			return fmt.Errorf("%s: --transport tcp: a peak benchmark measures the ByteExpress core and RC and UD perftest on the RDMA device and always runs over verbs (drop the flag)", p.File)
		}
		if strings.HasPrefix(r.Role, "mrcache-") {
			return fmt.Errorf("%s: --transport tcp: a mrcache benchmark measures memory registration (ibv_reg_mr) and RDMA WRITEs on the RDMA device and always runs over verbs (drop the flag)", p.File)
		}
		if strings.HasPrefix(r.Role, "hol-") {
			return fmt.Errorf("%s: --transport tcp: a hol benchmark measures head-of-line blocking behind the ByteExpress core's fragments on the RDMA device and always runs over verbs (drop the flag)", p.File)
		}
	}
	return nil
}

func writeReport(r *report.Result, path string) error {
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		return err
	}
	_, err := fileio.WriteFiles([]fileio.File{{Name: path, Data: b.Bytes()}})
	return err
}

func cmdSelftest(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("selftest", "selftest [--device NAME] [--port N] [--gid-index N] [--json]",
		`Loopback check of an RDMA device: two RC QPs on the device connected to each other,
then SEND/RECV ping-pong (latency), chained WRITEs (bandwidth, data check),
WRITE_WITH_IMM and READ. Needs a build with -tags rdma (libibverbs-dev) and an
RDMA device; says which is missing otherwise, and exits 1.`, stderr)
	dev := fs.String("device", "", "RDMA device (default: the first one)")
	port := fs.Uint("port", 1, "port number")
	gid := fs.Uint("gid-index", 0, "GID index (RoCEv2 is often not 0: see show_gids)")
	iters := fs.Int("iters", 1000, "ping-pong round trips")
	size := fs.Int("size", 1<<20, "bytes per WRITE")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	pos, code := parse(fs, args)
	if code != 0 || len(pos) > 0 {
		return helpCode(code)
	}
	devs, err := ibv.Devices()
	switch {
	case errors.Is(err, ibv.ErrNoRDMA):
		fmt.Fprintln(stderr, "berun selftest: built without rdma support (rebuild with -tags rdma; needs libibverbs-dev)")
		return 1
	case err != nil:
		hint := ""
		if _, serr := os.Stat("/sys/class/infiniband"); serr != nil {
			hint = "; /sys/class/infiniband is absent: no RDMA device or driver"
		}
		fmt.Fprintf(stderr, "berun selftest: no RDMA device found (%v%s)\n", err, hint)
		return 1
	case len(devs) == 0:
		fmt.Fprintln(stderr, "berun selftest: no RDMA device found (ibv_get_device_list returned none)")
		return 1
	}
	if *port == 0 || *port > 255 || *gid > 255 {
		fmt.Fprintln(stderr, "berun selftest: --port must be 1..255 and --gid-index 0..255")
		return 2
	}
	name := *dev
	if name == "" {
		name = devs[0]
	}
	ctx, err := ibv.OpenWith(name, ibv.Options{Port: uint8(*port), GIDIndex: int(*gid)})
	if err != nil {
		fmt.Fprintf(stderr, "berun selftest: %v (devices: %s)\n", err, strings.Join(devs, ", "))
		return 1
	}
	defer ctx.Close()
	rep, err := selftest.Loopback(ctx, ctx, selftest.Options{Port: uint8(*port), GIDIndex: uint8(*gid), Iters: *iters, Size: *size})
	if *asJSON && rep != nil {
		b, _ := json.MarshalIndent(rep, "", "  ")
		fmt.Fprintln(stdout, string(b))
	} else if rep != nil {
		fmt.Fprintf(stdout, "device %s port %d GID[%d] %s, %.0f Gbps, path MTU %d\n", rep.Device, *port, *gid, rep.GID, rep.PortRateGbps, rep.PathMTU)
		for _, c := range rep.Checks {
			fmt.Fprintf(stdout, "  ok  %s\n", c)
		}
		if err == nil {
			fmt.Fprintf(stdout, "latency (half RTT, 64 B SEND): p50 %.2f us, p99 %.2f us\n", rep.LatencyUSP50, rep.LatencyUSP99)
			fmt.Fprintf(stdout, "WRITE bandwidth: %.2f GB/s (%d bytes)\n", rep.WriteGBps, rep.WriteBytes)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "berun selftest: FAILED: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, "selftest passed")
	return 0
}

func cmdRoles(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("roles", "roles", "Lists the roles a plan may use, with their parameters and defaults.", stderr)
	if pos, code := parse(fs, args); code != 0 || len(pos) > 0 {
		return helpCode(code)
	}
	for _, n := range role.Names() {
		info, _ := role.Lookup(n)
		fmt.Fprintf(stdout, "%s\n    %s\n", n, info.Summary)
		for _, p := range info.Params {
			def := ""
			if p.Default != "" {
				def = " (default " + p.Default + ")"
			}
			fmt.Fprintf(stdout, "    %-14s %s%s\n", p.Name, p.Doc, def)
		}
	}
	return 0
}
