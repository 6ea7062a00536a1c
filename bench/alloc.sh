#!/bin/sh
# Figure 4 of the paper (§5.2): bemalloc against size-classed sync.Pools and
# make([]byte)+GC, operation rate and peak memory at 1, 2, 4 and 8
# goroutines, small (16 B-16 KB uniform) and large (64 KB-1 MB exponential)
# allocations with about 10% cross-thread frees (BenchmarkAlloc in
# byteexpress/bemalloc/bench_test.go). Run from anywhere in the repository:
#
#	sh bench/alloc.sh            # measure: results/fig4/bench.txt, then the report
#	sh bench/alloc.sh --report   # only the report and plots from bench.txt
#	sh bench/alloc.sh --measure  # only the measurement (bench.txt)
#
# The measurement is wall-clock time on this machine: it is not
# deterministic and is not part of results/regenerate.sh's byte-identical
# set. The report step is: from the committed bench.txt it rebuilds
# result.json, small.csv, large.csv, fig4.md and the plots byte-identically.
# Environment: BENCHTIME (default 1s) and COUNT (default 1) are go test's
# -benchtime and -count; BEMALLOC_TEST names a test binary built with
# `go test -c ./byteexpress/bemalloc` to run instead of `go test` (for a
# machine without the Go toolchain). The 40 benchmarks take several
# minutes at the defaults; 8 goroutines need 8 free cores to mean anything.
set -eu
cd "$(dirname "$0")/.."
out=results/fig4
mkdir -p "$out"
if [ "${1:-}" != "--report" ]; then
	bench='^BenchmarkAlloc$'
	trap 'rm -f "$out/bench.txt.tmp" "$out/bemalloc.test"' EXIT # a failed measurement leaves nothing behind
	args="-test.run ^\$ -test.bench $bench -test.benchtime ${BENCHTIME:-1s} -test.count ${COUNT:-1}"
	{
		echo "# command: go test -run '^\$' -bench '$bench' -benchtime ${BENCHTIME:-1s} -count ${COUNT:-1} ./byteexpress/bemalloc"
		echo "# date: $(date -u +%Y-%m-%d)"
		echo "# cores: $(nproc)"
		echo "# memory: $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo 2>/dev/null || echo unknown)"
		echo "# transparent huge pages: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo unknown)"
		echo "# kernel: $(uname -sr)"
		if [ -n "${BEMALLOC_TEST:-}" ]; then
			echo "# go: $(go version 2>/dev/null | awk '{print $3}' || echo unknown) (prebuilt test binary)"
		else
			echo "# go: $(go version | awk '{print $3}')"
		fi
	} >"$out/bench.txt.tmp"
	if [ -n "${BEMALLOC_TEST:-}" ]; then
		# shellcheck disable=SC2086 # args is a word list
		"$BEMALLOC_TEST" $args >>"$out/bench.txt.tmp"
	else
		(cd byteexpress/bemalloc && go test -c -o "$OLDPWD/$out/bemalloc.test" .)
		# shellcheck disable=SC2086
		(cd byteexpress/bemalloc && "$OLDPWD/$out/bemalloc.test" $args) >>"$out/bench.txt.tmp"
		rm -f "$out/bemalloc.test"
	fi
	mv "$out/bench.txt.tmp" "$out/bench.txt"
fi
[ "${1:-}" = "--measure" ] && exit 0
go run ./bench/internal/allocreport -o "$out" "$out/bench.txt"
for ext in png svg; do
	for r in small large; do
		go run ./cmd/besim plot --table "$r" --x threads --y ops/s \
			-title "Figure 4 (measured): $r allocations, operations per second" \
			-o "$out/ops_$r.$ext" "$out/result.json"
		go run ./cmd/besim plot --table "$r" --x threads --y "peak memory" \
			-title "Figure 4 (measured): $r allocations, peak memory" \
			-o "$out/peak_$r.$ext" "$out/result.json"
	done
done
