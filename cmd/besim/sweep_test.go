package main

import (
	"bytes"
	"encoding/csv"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/besim/besim/scenarios"
)

func besim(t *testing.T, args ...string) (string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(args, &out, &errb); code != 0 {
		t.Fatalf("besim %s: exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errb.String())
	}
	return out.String(), errb.String()
}

func read(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSweepCommand(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "buf.json")
	out, errs := besim(t, "sweep", "incast", "--set", "fabric.switch.buffer=1MiB,4MiB,8MiB", "--metrics", "pfc/frames_tx,flow/victim/goodput", "-o", f)
	for _, want := range []string{"Sweep of incast over fabric.switch.buffer (3 values)", "fabric.switch.buffer=8MiB", "pfc/frames_tx (frames)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(errs, "\r") {
		t.Errorf("progress bar drawn on a non-terminal: %q", errs)
	}
	if !strings.Contains(errs, "3 simulations in") {
		t.Errorf("stderr: %q", errs)
	}
	md := string(read(t, filepath.Join(dir, "buf.md")))
	if !strings.HasPrefix(md, "| point | pfc/frames_tx (frames) |") {
		t.Errorf("markdown:\n%s", md)
	}
	// The CSV is tidy: one column per swept key, named by the key, with
	// the values as given; machine headers with units; numbers that parse.
	recs, err := csv.NewReader(bytes.NewReader(read(t, filepath.Join(dir, "buf.csv")))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"fabric.switch.buffer", "pfc/frames_tx", "flow/victim/goodput_gbps"}; len(recs) != 4 || !slices.Equal(recs[0], want) {
		t.Fatalf("csv %q, want header %q and 3 rows", recs, want)
	}
	for i, rec := range recs[1:] {
		if sz, err := scenarios.ParseSize(rec[0]); err != nil || rec[0] != []string{"1MiB", "4MiB", "8MiB"}[i] || sz <= 0 {
			t.Errorf("row %d: swept value %q (%v)", i, rec[0], err)
		}
		if n, err := strconv.ParseInt(rec[1], 10, 64); err != nil || n < 0 {
			t.Errorf("row %d: frames %q is not a count", i, rec[1])
		}
		if g, err := strconv.ParseFloat(rec[2], 64); err != nil || g <= 0 || strings.ContainsAny(rec[2], "eE") {
			t.Errorf("row %d: goodput %q", i, rec[2])
		}
	}

	// --jobs 1 writes the same bytes.
	g := filepath.Join(dir, "buf1.json")
	besim(t, "sweep", "--jobs", "1", "-q", "--set", "fabric.switch.buffer=1MiB,4MiB,8MiB", "--metrics", "pfc/frames_tx,flow/victim/goodput", "-o", g, "incast")
	if !bytes.Equal(read(t, f), read(t, g)) {
		t.Errorf("--jobs 1 and the default differ")
	}
}

func TestShardAndMergeCommands(t *testing.T) {
	dir := t.TempDir()
	args := []string{"sweep", "incast", "-q", "--keep", "--set", "fabric.switch.buffer=1MiB,2MiB,4MiB", "--set", "seed=1,2"}
	full := filepath.Join(dir, "full.json")
	besim(t, append(args, "-o", full)...)
	var shards []string
	for _, s := range []string{"0/2", "1/2"} {
		f := filepath.Join(dir, "shard"+s[:1]+".json")
		besim(t, append(args, "--shard", s, "-o", f)...)
		shards = append(shards, f)
	}
	merged := filepath.Join(dir, "merged.json")
	besim(t, "merge", shards[1], shards[0], "-o", merged)
	for _, ext := range []string{".json", ".csv", ".md"} {
		if a, b := read(t, strings.TrimSuffix(full, ".json")+ext), read(t, strings.TrimSuffix(merged, ".json")+ext); !bytes.Equal(a, b) {
			t.Errorf("merged%s differs from full%s", ext, ext)
		}
	}
	out, _ := besim(t, "merge", shards[0], shards[1])
	if out != string(read(t, full)) {
		t.Errorf("merge to stdout differs from the full run")
	}
}

func TestSearchCommand(t *testing.T) {
	dir := t.TempDir()
	out, _ := besim(t, "sweep", "incast", "--search", "flows[0].src#len=1..16", "--until", "pfc/frames_tx>0", "-o", filepath.Join(dir, "s.json"))
	for _, want := range []string{"Largest flows[0].src#len in [1, 16] with pfc/frames_tx>0 still false", "largest (hosts)", "[base] pfc/frames_tx>0: flows[0].src#len=1 false (0), flows[0].src#len=16 true"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestPlotAndCompareCommands(t *testing.T) {
	dir := t.TempDir()
	sw := filepath.Join(dir, "sw.json")
	besim(t, "sweep", "incast", "-q", "--set", "fabric.switch.buffer=1MiB,2MiB,4MiB", "--set", "flows[incast].rate=10Gbps,15Gbps", "-o", sw)
	runDir := filepath.Join(dir, "run")
	besim(t, "run", "-q", "--out", runDir, "incast")
	res := filepath.Join(runDir, "result.json")

	for _, args := range [][]string{
		{sw, "--x", "fabric.switch.buffer", "--y", "pfc/frames_tx"},
		{res, "--series", "queue/"},
		{res, "--bar", "flows:goodput"},
		{res, "--cdf", "queue/sw0->h16/3"},
		{sw, "--x", "fabric.switch.buffer", "--y", "pfc/frames_tx", "--y", "flow/victim/goodput", "--ref", "r=1MiB:3,4MiB:5"},
		// the committed Table 4, Figure 10 and 13 plots (results/regenerate.sh)
		{"../../results/table4/search.json", "--x", "workload.window", "--y", "largest", "--ref-file", "../../results/table4/paper.csv"},
		{"../../results/fig10/result.json", "--table", "fragsize", "--x", "fragment", "--y", "goodput"},
		{"../../results/fig13/result.json", "--table", "hol", "--x", "large flows", "--y", "P50,P99", "--log-y", "--ymin", "1"},
	} {
		var svgs [][]byte
		for i := range 2 {
			f := filepath.Join(dir, "p"+string(rune('0'+i))+".svg")
			besim(t, append([]string{"plot", "-o", f}, args...)...)
			svgs = append(svgs, read(t, f))
		}
		if !bytes.Equal(svgs[0], svgs[1]) {
			t.Errorf("plot %v: SVG differs between runs", args)
		}
		pf := filepath.Join(dir, "p.png")
		besim(t, append([]string{"plot", "-o", pf}, args...)...)
		fh, _ := os.Open(pf)
		if _, err := png.Decode(fh); err != nil {
			t.Errorf("plot %v: PNG: %v", args, err)
		}
		fh.Close()
	}

	lossy := filepath.Join(dir, "lossy")
	besim(t, "run", "-q", "--out", lossy, "incast-lossy")
	out, _ := besim(t, "compare", res, filepath.Join(lossy, "result.json"), "--names", "lossless,lossy")
	for _, want := range []string{"lossless vs lossy (incast)", "pfc/frames_tx (frames)", "ratio"} {
		if !strings.Contains(out, want) {
			t.Errorf("compare lacks %q:\n%s", want, out)
		}
	}
	out, _ = besim(t, "compare", "--md", "--table", "sweep", sw, sw)
	if !strings.Contains(out, "| metric | ") || !strings.Contains(out, "sweep/fabric.switch.buffer=1MiB,flows[incast].rate=10Gbps/pfc/frames_tx (frames) |") {
		t.Errorf("compare --md --table:\n%s", out)
	}
}

func TestSweepCommandErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"sweep"}, 2, "usage: besim sweep"},
		{[]string{"sweep", "incast", "--set", "fabric.links.rate=25Gbs", "-o", dir + "/x.json"}, 1, `--set fabric.links.rate=25Gbs: "25Gbs" is not a rate`},
		{[]string{"sweep", "incast", "--set", "fabric.links.nope=1", "-o", dir + "/x.json"}, 1, `--set fabric.links.nope=1: unknown key "nope"`},
		{[]string{"sweep", "incast", "--search", "seed=1..3"}, 1, "--search needs --until"},
		{[]string{"sweep", "incast", "--until", "a>1"}, 1, "--until needs --search"},
		{[]string{"sweep", "incast", "--search", "seed=1..3", "--until", "nope>0", "-o", dir + "/y.json"}, 1, "no metric nope"},
		{[]string{"sweep", "incast", "--shard", "2/2"}, 1, "--shard 2/2: want i/n"},
		{[]string{"sweep", "incast", "--set", "seed=1", "-o", dir + "/x.csv"}, 1, "name the output FILE.json"},
		{[]string{"sweep", "incast", "--bogus"}, 2, "flag provided but not defined"},
		{[]string{"merge"}, 2, "usage: besim merge"},
		{[]string{"merge", dir + "/none.json"}, 1, "no such file"},
		{[]string{"plot", "x.json"}, 2, "usage: besim plot"},
		{[]string{"plot", "--bar", "a:b", "--series", "q", "-o", dir + "/p.svg", "x.json"}, 1, "one kind at a time"},
		{[]string{"plot", "--ref", "paper", "-o", dir + "/p.svg", "x.json"}, 1, `--ref: plot: reference "paper": want LABEL=X1:Y1,X2:Y2`},
		{[]string{"plot", "--ymin", "low", "-o", dir + "/p.svg", "x.json"}, 1, "--ymin low: want a finite number"},
		{[]string{"plot", "--cdf", "all", "--log-y", "-o", dir + "/p.svg", "x.json"}, 1, "do not apply to --cdf"},
		{[]string{"plot", "--bar", "a:b", "--ref", "p=1:2", "-o", dir + "/p.svg", "x.json"}, 1, "--ref and --ref-file apply to sweep and table line plots"},
		{[]string{"plot", "--ref-file", dir + "/none.csv", "-o", dir + "/p.svg", "x.json"}, 1, "no such file"},
		{[]string{"compare", "a.json"}, 2, "usage: besim compare"},
	}
	for _, tc := range tests {
		var out, errb bytes.Buffer
		code := run(tc.args, &out, &errb)
		if code != tc.code || !strings.Contains(out.String()+errb.String(), tc.want) {
			t.Errorf("%v: exit %d, output %q; want exit %d containing %q", tc.args, code, out.String()+errb.String(), tc.code, tc.want)
		}
	}
}
