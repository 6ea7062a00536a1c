#!/bin/sh
# One prepared check for a lent machine (the project's sessions are lent a
# GPU server now and then, for minutes, with no Go toolchain and no network
# assumed there): what hardware it has, whether it has an RDMA device, and
# if so the first hardware run of `berun selftest` and the verbs
# conformance suite; on 8 or more cores, Figure 4's allocator measurement
# (bench/alloc.sh), which 2 cores cannot make (issue 18). Two steps:
#
#	sh bench/device.sh build   # here: binaries into .device/ (git ignores it)
#	sh bench/device.sh run     # there, with .device carried: reports into $OUT
#
# `run` writes into $OUT (default: a new temporary folder, printed):
#
#	machine.txt      cores, CPU, memory, kernel, transparent huge pages
#	rdma.txt         ibv_devices, ibv_devinfo, /sys/class/infiniband, rdma link
#	selftest.txt     berun selftest --json (only with an RDMA device)
#	conformance.txt  verbs/ibv's TestConformance and TestPostPollDoNotAllocate
#	                 on the device, verbose (only with an RDMA device)
#	fig4-bench.txt   bench/alloc.sh --measure's bench.txt (only on 8+ cores;
#	                 BENCHTIME and COUNT as there, default 500ms and 3 here,
#	                 the committed run's; a few minutes, cut at 5)
#	summary.txt      one line a step: what ran and how it ended
#
# Every step has its own time limit and a step that fails is reported in
# summary.txt, not fatal: `run` exits 0 when it could write its reports.
# Nothing here has run on an RDMA device yet.
set -eu
cd "$(dirname "$0")/.."
bin=.device

case "${1:-}" in
build)
	mkdir -p "$bin"
	go build -tags rdma -o "$bin/berun" ./cmd/berun
	go test -c -tags rdma -o "$bin/ibv.test" ./verbs/ibv
	go test -c -o "$bin/bemalloc.test" ./byteexpress/bemalloc
	echo "$(git rev-parse HEAD 2>/dev/null || echo unknown) built with $(go version | awk '{print $3}')" >"$bin/revision"
	echo "built into $bin/ ($(du -sh "$bin" | cut -f1)); carry it: run(carry=[\"$bin\"], command=\"sh bench/device.sh run\")"
	;;
run)
	for f in berun ibv.test bemalloc.test; do
		[ -x "$bin/$f" ] || { echo "bench/device.sh run: $bin/$f missing: run 'sh bench/device.sh build' first and carry $bin" >&2; exit 1; }
	done
	out=${OUT:-$(mktemp -d)}
	mkdir -p "$out"
	summary="$out/summary.txt"
	: >"$summary"
	note() { echo "$*" | tee -a "$summary"; }
	count() { if [ -f "$2" ]; then grep -c -- "$1" "$2" || true; else echo 0; fi; } # lines of file $2 matching $1
	note "revision $(cat "$bin/revision"), $(date -u +%Y-%m-%dT%H:%M:%SZ)"

	{
		echo "nproc: $(nproc)"
		grep -m1 'model name' /proc/cpuinfo || true
		grep -E 'MemTotal' /proc/meminfo || true
		echo "kernel: $(uname -sr)"
		echo "transparent huge pages: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo unknown)"
		command -v lscpu >/dev/null && lscpu || true
	} >"$out/machine.txt" 2>&1
	note "machine: $(nproc) cores"

	# RDMA hardware: any one of these finding a device counts.
	devices=0
	{
		for c in "ibv_devices" "ibv_devinfo" "rdma link"; do
			echo "\$ $c"
			if command -v "${c%% *}" >/dev/null; then
				timeout 20 $c 2>&1 || echo "(exit $?)"
			else
				echo "(not installed)"
			fi
		done
		echo "\$ ls /sys/class/infiniband"
		ls -l /sys/class/infiniband 2>&1 || true
	} >"$out/rdma.txt" 2>&1
	if [ -n "$(ls /sys/class/infiniband 2>/dev/null)" ]; then
		devices=$(ls /sys/class/infiniband | wc -l)
	fi
	note "rdma: $devices device(s) in /sys/class/infiniband"

	if [ "$devices" -gt 0 ]; then
		rc=0
		timeout 60 "$bin/berun" selftest --json >"$out/selftest.txt" 2>&1 || rc=$?
		note "selftest: exit $rc"
		rc=0
		timeout 180 "$bin/ibv.test" -test.run '^(TestConformance|TestPostPollDoNotAllocate)$' -test.v >"$out/conformance.txt" 2>&1 || rc=$?
		c="$out/conformance.txt"
		note "conformance: exit $rc, $(count '--- PASS' "$c") passed, $(count '--- FAIL' "$c") failed, $(count '--- SKIP' "$c") skipped"
	else
		note "selftest, conformance: skipped (no RDMA device)"
	fi

	if [ "$(nproc)" -ge 8 ]; then
		rc=0
		BEMALLOC_TEST="$PWD/$bin/bemalloc.test" BENCHTIME="${BENCHTIME:-500ms}" COUNT="${COUNT:-3}" \
			timeout 300 sh bench/alloc.sh --measure >"$out/fig4-log.txt" 2>&1 || rc=$?
		# bench.txt is replaced only by a finished measurement: after a
		# failure it is still the committed one, so it is not copied.
		[ "$rc" -eq 0 ] && cp results/fig4/bench.txt "$out/fig4-bench.txt"
		note "fig4: exit $rc ($(count '^BenchmarkAlloc' "$out/fig4-bench.txt") benchmark lines)"
	else
		note "fig4: skipped ($(nproc) cores; 8 goroutines need 8 free cores)"
	fi
	echo "reports in $out"
	;;
*)
	echo "usage: sh bench/device.sh build | run" >&2
	exit 2
	;;
esac
