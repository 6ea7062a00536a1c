#!/bin/sh
# Regenerates the committed paper reproductions in results/ (see
# results/README.md). Run from anywhere inside the repository; each line is
# one `besim run` (or `besim sweep`) of an embedded scenario, deterministic
# (same scenario and seed, byte-identical JSON and CSVs). The whole script
# takes about two minutes on 2 cores, most of it the two Table 4 searches.
set -eu
cd "$(dirname "$0")/.."

go run ./cmd/besim run -q --out results/table2 table2                 # paper Table 2 (§5.1)
go run ./cmd/besim run -q --out results/fig11 fig11                   # paper Figure 11 (§6.2.1)
go run ./cmd/besim run -q --out results/dcqcn-incast dcqcn-incast     # DCQCN holds an 8-to-1 incast in the ECN band
go run ./cmd/besim run -q --out results/pfc-incast pfc-incast         # the same without congestion control: PFC
go run ./cmd/besim run -q --out results/dcqcn-fairness dcqcn-fairness # two DCQCN flows converge to equal shares
# paper Table 4 (§6.3): servers before PFC per send window (bisection; ~45 s on 2 cores)
go run ./cmd/besim sweep -q --search workload.servers=1..1024 --until 'pfc/frames_tx>0' \
	--set workload.window=4KiB,8KiB,16KiB,none -o results/table4/search.json fig14-incast
go run ./cmd/besim sweep -q --search workload.servers=1..1024 --until 'pfc/frames_tx>0' \
	--set rnic.cc=none --set workload.window=4KiB,8KiB,16KiB,none -o results/table4/search-cc-none.json fig14-incast
# paper Figure 15 (§6.3): worker/victim bandwidth and pull latency per window (~4 s)
go run ./cmd/besim sweep -q --set workload.window=none,4KiB,8KiB,16KiB -o results/fig15/sweep.json \
	--metrics worker/goodput,victim/goodput,pull/p50,pull/p99,pull/count,pfc/frames_tx,pfc/host_paused,fabric/ecn_marks,cpu/server_util,cpu/worker_util \
	fig15-incast
for m in victim/goodput worker/goodput pull/p50 pull/p99; do
	f=$(echo "$m" | tr / _)
	for ext in png svg; do
		go run ./cmd/besim plot -bar "sweep:$m" -title "Figure 15 (model): $m by send window, 64 servers" \
			-o "results/fig15/$f.$ext" results/fig15/sweep.json
	done
done
for ext in png svg; do
	go run ./cmd/besim plot --x workload.window --y largest -title "Table 4 (model): servers before PFC by send window" \
		-o "results/table4/servers_before_pfc.$ext" results/table4/search.json
done
