#!/bin/sh
# The performance benchmark set (issue 19): builds besim once and runs each
# benchmark below once with default outputs, printing one Markdown table row
# per benchmark: simulated time, wall time, CPU time (user+sys), kernel
# events, events per wall second and peak RSS (GNU time's %M). Run from
# anywhere inside the repository:
#
#	sh bench/run.sh            # every benchmark
#	sh bench/run.sh fattree8   # only those named (fattree8 fattree16 table4-256 table4 training inference training100 inference100)
#
# table4 is the whole Table 4 search (48 simulations, two at a time: its
# CPU time is the sum over both workers, its events the sum over all
# simulations); it is not in the default set (minutes on 2 cores), so
# name it: sh bench/run.sh table4. Likewise training100 and inference100,
# the issue's 100 ms of each (5-10 minutes each on one core; the default
# set runs 5 ms of each).
#
# Wall time on a shared machine depends on its load: compare CPU time too.
# Results go to a temporary folder that is removed afterwards. Needs GNU
# time at /usr/bin/time.
set -eu
cd "$(dirname "$0")/.."
[ -x /usr/bin/time ] || { echo "bench/run.sh: needs GNU time at /usr/bin/time (apt-get install time)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/besim" ./cmd/besim

# name | what | besim run arguments
benchmarks='fattree8|k=8 fat-tree incast, 64 x 1 MB (bench/fattree-incast.yaml)|bench/fattree-incast.yaml
fattree16|k=16 fat-tree incast, 512 x 250 KB (bench/fattree16-incast.yaml)|bench/fattree16-incast.yaml
table4-256|fig14-incast at 256 servers (one Table 4 point)|--set workload.servers=256 fig14-incast
table4|Table 4 search (results/table4/search.json), sweep|sweep --search workload.servers=1..1024 --until pfc/frames_tx>0 --set workload.window=4KiB,8KiB,16KiB,none fig14-incast
training|training, 5 ms (--set duration=5ms)|--set duration=5ms training
inference|inference, 5 ms (--set duration=5ms)|--set duration=5ms inference
training100|training, 100 ms (--set duration=100ms)|--set duration=100ms training
inference100|inference, 100 ms (--set duration=100ms)|--set duration=100ms inference'

echo "| benchmark | simulated | wall s | CPU s | events | events/s (wall) | peak RSS |"
echo "|---|---|---|---|---|---|---|"
echo "$benchmarks" | while IFS='|' read -r name what args; do
	if [ $# -gt 0 ]; then
		case " $* " in *" $name "*) ;; *) continue ;; esac
	elif [ "$name" = table4 ] || [ "$name" = training100 ] || [ "$name" = inference100 ]; then
		continue
	fi
	case $args in
	sweep\ *) cmd="sweep -q -o $tmp/out-$name/result.json ${args#sweep }" ;;
	*) cmd="run -q --out $tmp/out-$name $args" ;;
	esac
	# shellcheck disable=SC2086 # cmd is a word list
	if ! /usr/bin/time -f 'TIME %e %U %S %M' -o "$tmp/time" "$tmp/besim" $cmd >"$tmp/stdout" 2>"$tmp/stderr"; then
		echo "bench/run.sh: $name failed:" >&2
		cat "$tmp/stderr" >&2
		exit 1
	fi
	sim=$(sed -n 's/^simulated \([^ ]*\) in .*/\1/p' "$tmp/stderr")
	events=$(sed -n 's/^simulated .*wall (\([0-9]*\) events.*/\1/p' "$tmp/stderr")
	# A sweep prints "48 simulations in ... (..., 116.9M events)".
	if [ -z "$events" ]; then
		sim=$(sed -n 's/^\([0-9]*\) simulations in .*/\1 runs/p' "$tmp/stderr")
		events=$(sed -n 's/^[0-9]* simulations in .*, \([0-9.]*\)M events)$/\1/p' "$tmp/stderr" | awk '{ printf "%d", $1 * 1e6 }')
	fi
	awk -v what="$what" -v sim="$sim" -v ev="${events:-0}" '/^TIME/ {
		wall = $2; cpu = $3 + $4; rss = $5 / 1024
		eps = (ev > 0 && wall > 0) ? sprintf("%.2fM", ev / wall / 1e6) : "n/a"
		printf "| %s | %s | %.2f | %.2f | %d | %s | %.0f MB |\n", what, sim, wall, cpu, ev, eps, rss
	}' "$tmp/time"
done
