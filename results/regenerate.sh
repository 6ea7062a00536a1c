#!/bin/sh
# Regenerates the committed paper reproductions in results/ (see
# results/README.md). Run from anywhere inside the repository; each line is
# one `besim run` of an embedded scenario, deterministic (same scenario and
# seed, byte-identical result.json and CSVs). The whole script takes a few
# seconds.
set -eu
cd "$(dirname "$0")/.."

go run ./cmd/besim run -q --out results/table2 table2                 # paper Table 2 (§5.1)
go run ./cmd/besim run -q --out results/fig11 fig11                   # paper Figure 11 (§6.2.1)
go run ./cmd/besim run -q --out results/dcqcn-incast dcqcn-incast     # DCQCN holds an 8-to-1 incast in the ECN band
go run ./cmd/besim run -q --out results/pfc-incast pfc-incast         # the same without congestion control: PFC
go run ./cmd/besim run -q --out results/dcqcn-fairness dcqcn-fairness # two DCQCN flows converge to equal shares
