#!/bin/sh
# Cache misses of the embedded `training` scenario under valgrind's
# cachegrind: instructions, L1 data misses and last-level misses, which
# vary little between runs of one build (up to 0.25% in instructions and
# L1 misses, up to 4% in the smaller run's last-level misses) where CPU
# seconds on a shared machine vary by several percent between rounds. Two runs: `training` for 100 us (mostly the
# connection setup of its 85,808 QPs) with a 32 MiB last-level cache, and
# a smaller `training` (24 servers, 68 trainers) for 2 ms with 1 MiB.
# Run from anywhere in the repository:
#
#	sh bench/cachegrind.sh          # this working tree
#	sh bench/cachegrind.sh REV      # git revision REV, then this tree,
#	                                # and whether their outputs are identical
#
# Needs valgrind (Debian: apt-get install valgrind). Each run takes one to
# three minutes. GOGC=off keeps the collector's work out of the counts.
# Exits 1 if a run fails and 3 if the two builds' outputs differ (after
# printing the table).
set -eu
cd "$(dirname "$0")/.."
if ! command -v valgrind >/dev/null 2>&1; then
	echo "bench/cachegrind.sh: valgrind not found (Debian: apt-get install valgrind)" >&2
	exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
builds=tree
if [ $# -gt 0 ]; then
	if ! git rev-parse --verify -q "$1^{commit}" >/dev/null; then
		echo "bench/cachegrind.sh: $1 is not a git revision here" >&2
		exit 1
	fi
	mkdir "$tmp/src"
	git archive "$1" | tar -x -C "$tmp/src"
	(cd "$tmp/src" && go build -buildvcs=false -o "$tmp/besim-rev" ./cmd/besim)
	builds="rev tree"
fi
go build -buildvcs=false -o "$tmp/besim-tree" ./cmd/besim

# count FILE LABEL: valgrind's summary line LABEL (e.g. "D1  misses") as a
# plain number.
count() {
	awk -v l="$2:" '{ sub(/^==[0-9]+== /, "") } index($0, l) == 1 { v = substr($0, length(l) + 1); sub(/^ +/, "", v); split(v, f, " "); gsub(",", "", f[1]); print f[1]; exit }' "$1"
}

printf '| run | build | instructions | L1 data misses | last-level misses |\n'
printf '|---|---|---|---|---|\n'
differ=0
for run in full small; do
	case $run in
	full) ll=33554432 args="--set duration=100us" ;;
	small) ll=1048576 args="--set duration=2ms --set workload.servers=24 --set workload.trainers=68" ;;
	esac
	for b in $builds; do
		log=$tmp/$run-$b.log
		# $args is split on purpose: it holds several flags.
		# shellcheck disable=SC2086
		if ! GOGC=off valgrind --tool=cachegrind --cache-sim=yes --LL=$ll,16,64 \
			--cachegrind-out-file=/dev/null "$tmp/besim-$b" run -q $args \
			--out "$tmp/out-$run-$b" training >"$log" 2>&1; then
			echo "bench/cachegrind.sh: the $run run of build $b failed:" >&2
			tail -20 "$log" >&2
			exit 1
		fi
		printf '| %s | %s | %s | %s | %s |\n' "$run" "$b" \
			"$(count "$log" 'I   refs')" "$(count "$log" 'D1  misses')" "$(count "$log" 'LL misses')"
	done
	if [ "$builds" = "rev tree" ] && ! diff -r "$tmp/out-$run-rev" "$tmp/out-$run-tree" >/dev/null; then
		echo "bench/cachegrind.sh: the $run run's outputs differ between $1 and this tree" >&2
		differ=1
	fi
done
if [ "$differ" = 1 ]; then
	exit 3
fi
if [ "$builds" = "rev tree" ]; then
	echo "outputs identical"
fi
