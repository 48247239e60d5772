#!/usr/bin/env bash
# Measure, simulate and compare the validation scenarios.
#
#   validation/run.sh                 measure each scenario N times (root; ~2 min per repeat of
#                                     the whole set), simulate it, compare, print the error table
#   validation/run.sh --no-measure    only simulate and compare against the committed measurements
#   validation/run.sh -n 2 v1-ext4-8mib v2-ext4-32mib     two repeats of two scenarios
#   WBLAB=/path/to/wblab SIM=/tmp/old validation/run.sh --no-measure   compare another build
#
# Measurements go to validation/measured/<scenario>/r<i>/ (the kernel's trace gzipped),
# simulations to target/validation/<scenario>/. The final table
# compares the simulation with the mean of the measured repeats; the measured spread is
# (max - min) / mean over the repeats.
set -euo pipefail
cd "$(dirname "$0")/.."

REPEATS=3
MEASURE=1
NAMES=()
while [ $# -gt 0 ]; do
    case "$1" in
        -n) REPEATS="$2"; shift 2 ;;
        --no-measure) MEASURE=0; shift ;;
        -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
        *) NAMES+=("$1"); shift ;;
    esac
done
if [ ${#NAMES[@]} -eq 0 ]; then
    for f in validation/*.toml; do NAMES+=("$(basename "$f" .toml)"); done
fi

# WBLAB=<binary> compares another build (e.g. an older commit's) without building this one.
if [ -z "${WBLAB:-}" ]; then
    cargo build --release -q -p wblab
fi
W=${WBLAB:-target/release/wblab}
SIM=${SIM:-target/validation}
mkdir -p "$SIM"

for name in "${NAMES[@]}"; do
    sc="validation/$name.toml"
    if [ "$MEASURE" = 1 ]; then
        for i in $(seq 1 "$REPEATS"); do
            out="validation/measured/$name/r$i"
            rm -rf "$out"
            echo "== measure $name (repeat $i of $REPEATS)" >&2
            "$W" measure "$sc" --out "$out" --quiet > /dev/null
            grep -o '"other_cpu_fraction": [0-9.]*' "$out/machine.json" >&2 || true
            # Keep the committed set small: the kernel's trace compressed (zcat to read it;
            # compare takes the pause distributions from histograms.json).
            gzip -9f "$out/trace.txt"
            # An emulated device's list of requests, likewise.
            for f in "$out"/emulated-*.csv; do [ -e "$f" ] && gzip -9f "$f"; done
        done
    fi
    echo "== simulate $name" >&2
    "$W" run "$sc" --out "$SIM/$name" --quiet > /dev/null
done

for name in "${NAMES[@]}"; do
    reps=(validation/measured/"$name"/r*)
    echo
    echo "### $name"
    "$W" compare "${reps[@]}" "$SIM/$name"
    "$W" compare --json "${reps[@]}" "$SIM/$name" > "$SIM/$name.compare.json"
done

# The error table: simulated vs the mean of the measured repeats, for the headline figures.
echo
echo "### errors: simulated vs measured (mean of repeats; spread = (max-min)/mean)"
python3 - "$SIM" "${NAMES[@]}" <<'EOF'
import json, sys
sim_dir, names = sys.argv[1], sys.argv[2:]
want = ["MB written", "pause p50", "pause p90", "pause max", "op latency p50", "op latency p99",
        "2nd half: write_bw", "2nd half: dirty_ratelimit", "2nd half: nr_dirty", "2nd half: nr_writeback",
        ": bw", ": iops", "clat p50", "clat p99", "sync p50", "sync p99"]
print(f"| scenario | figure | measured | spread | simulated | error |")
print(f"|---|---|---|---|---|---|")
for n in names:
    c = json.load(open(f"{sim_dir}/{n}.compare.json"))
    other, foreign = [], []
    for r in c["runs"][:-1]:
        try:
            other.append(json.load(open(r["dir"] + "/machine.json"))["other_cpu_fraction"])
            s = json.load(open(r["dir"] + "/summary.json"))
            rows = open(r["dir"] + "/timeseries.csv").read().split()
            dirtied = int(rows[-1].split(",")[5]) * 4096
            ours = sum(t["bytes_written"] for t in s["tasks"])
            # fio writes out the files its reading jobs need before they start.
            ours += json.load(open(r["dir"] + "/machine.json")).get("fio_layout_bytes", 0)
            foreign.append(max(0, dirtied - ours) / 2**20)
        except (OSError, KeyError, IndexError, ValueError):
            pass
    if other and max(other) > 0.25:
        print(f"| {n} | (other load used up to {max(other) * 100:.0f}% of the CPUs during a measurement: expect noise) | | | | |")
    if foreign and max(foreign) > 10:
        print(f"| {n} | (other processes dirtied up to {max(foreign):.0f} MiB during a measurement, sharing the dirty limit) | | | | |")
    for f in c["figures"]:
        if not any(w in f["name"] for w in want) or f["name"].startswith("device"):
            continue
        # Real fio is one task of the measurement; the simulation has one per job instead.
        if f["name"].startswith("fio:") and f["values"][-1] is None:
            continue
        meas = [v for v in f["values"][:-1] if v is not None]
        sim = f["values"][-1]
        if not meas:
            continue
        mean = sum(meas) / len(meas)
        spread = (max(meas) - min(meas)) / mean if mean else 0.0
        err = "-" if sim is None or mean == 0 else f"{(sim - mean) / mean * 100:+.1f}%"
        simv = "-" if sim is None else f"{sim:.4g}"
        print(f"| {n} | {f['name']} ({f['unit']}) | {mean:.4g} | {spread * 100:.1f}% | {simv} | {err} |")
    for d in c["demerits"]:
        v = d["demerit_ms"][-1]
        r = d["relative"][-1]
        if v is not None:
            print(f"| {n} | demerit {d['name']} (ms) | | | {v:.3g} | {r * 100:.0f}% of mean |")
EOF
