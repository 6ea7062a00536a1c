#!/bin/sh
# What the default time series cost (issue 19): builds besim once and runs
# the k=16 fat-tree incast (bench/fattree16-incast.yaml) N times with
# default outputs and N times with `--set outputs.series=none`, the two
# alternating, and prints the median and range of wall time, CPU time
# (user+sys) and peak RSS of each, and the ratio of the medians. It also
# checks that the runs' qps.csv, nics.csv and ports.csv are byte-identical
# in both modes (the flows complete at the same instants). Run from
# anywhere inside the repository:
#
#	sh bench/series.sh        # 30 pairs
#	sh bench/series.sh 10     # 10 pairs
#
# Wall time on a shared machine depends on its load: run it on an idle
# machine and read the CPU column too. Needs GNU time at /usr/bin/time.
set -eu
cd "$(dirname "$0")/.."
[ -x /usr/bin/time ] || { echo "bench/series.sh: needs GNU time at /usr/bin/time (apt-get install time)" >&2; exit 1; }
n=${1:-30}
case $n in '' | *[!0-9]* | 0) echo "bench/series.sh: the number of pairs must be a positive integer, got '$n'" >&2; exit 2 ;; esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/besim" ./cmd/besim
scenario=bench/fattree16-incast.yaml

# one MODE OUT [ARGS...]: runs once, appends "wall_s cpu_s rss_kb" to $tmp/MODE.
one() {
	mode=$1 out=$2
	shift 2
	rm -rf "$out"
	start=$(date +%s%N)
	if ! /usr/bin/time -f '%U %S %M' -o "$tmp/time" "$tmp/besim" run -q --out "$out" "$@" "$scenario" >/dev/null 2>"$tmp/stderr"; then
		echo "bench/series.sh: the $mode run failed:" >&2
		cat "$tmp/stderr" >&2
		exit 1
	fi
	end=$(date +%s%N)
	awk -v ns=$((end - start)) '{ printf "%.4f %.2f %d\n", ns / 1e9, $1 + $2, $3 }' "$tmp/time" >>"$tmp/$mode"
}

i=0
while [ "$i" -lt "$n" ]; do
	one default "$tmp/on"
	one none "$tmp/off" --set outputs.series=none
	i=$((i + 1))
done
for f in qps.csv nics.csv ports.csv; do
	cmp -s "$tmp/on/$f" "$tmp/off/$f" || { echo "bench/series.sh: $f differs with and without series" >&2; exit 1; }
done

# stats COLUMN FILE: the median, smallest and largest value of a column.
stats() {
	cut -d' ' -f"$1" "$2" | sort -n | awk '{ v[NR] = $1 } END { printf "%s %s %s\n", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2, v[1], v[NR] }'
}
echo "| outputs | wall s, median (range) | CPU s, median (range) | peak RSS MB, median (range) |"
echo "|---|---|---|---|"
for mode in default none; do
	echo "$mode $(stats 1 "$tmp/$mode") $(stats 2 "$tmp/$mode") $(stats 3 "$tmp/$mode")"
done | awk -v n="$n" '{
	printf "| %s | %.3f (%.3f-%.3f) | %.2f (%.2f-%.2f) | %.0f (%.0f-%.0f) |\n", $1, $2, $3, $4, $5, $6, $7, $8 / 1024, $9 / 1024, $10 / 1024
	wall[NR] = $2; cpu[NR] = $5
} END {
	printf "\ndefault outputs against series none, %d alternating pairs: wall %.3fx, CPU %.3fx (ratios of the medians); qps.csv, nics.csv and ports.csv identical\n", n, wall[1] / wall[2], cpu[1] / cpu[2]
}'
