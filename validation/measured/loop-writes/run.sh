#!/bin/sh
# Where a loop device's 4 KiB O_DIRECT write spends the time a read does not: the same random
# reads and writes at queue depths 1, 8 and 32, on a file on the host disk `vda` and on ext4 on
# a fresh direct-io loop device over an image on `vda`, fio's files laid out (written) first.
# Run as root on an otherwise quiet machine:
#   validation/measured/loop-writes/run.sh [DIR]   (DIR on vda; default /var/tmp/wblab-lw)
# Writes fio's JSON to ./out and ./summary.txt; detaches the loop and removes DIR after.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:-/var/tmp/wblab-lw}
mkdir -p "$dir/mnt" "$here/out"
loop=
cleanup() {
  if mountpoint -q "$dir/mnt"; then umount "$dir/mnt"; fi
  if [ -n "$loop" ]; then losetup -d "$loop"; fi
  rm -f "$dir/image" "$dir/vfile"
  rmdir "$dir/mnt" "$dir" 2>/dev/null || true
}
trap cleanup EXIT
fallocate -l 2G "$dir/image"
loop=$(losetup --direct-io=on --show -f "$dir/image")
mkfs.ext4 -q "$loop"
mount "$loop" "$dir/mnt"
job() { # name, file, rw, depth
  printf '[global]\ndirect=1\ntime_based=1\nruntime=5\nsize=256m\nbs=4k\n[j]\nioengine=libaio\nfilename=%s\nrw=%s\niodepth=%s\n' "$2" "$3" "$4" > "$here/out/$1.fio"
}
for where in vda loop; do
  f=$dir/vfile; [ $where = loop ] && f=$dir/mnt/file
  for qd in 1 8 32; do
    job $where-read-qd$qd "$f" randread $qd
    job $where-write-qd$qd "$f" randwrite $qd
  done
  fio --create_only=1 "$here/out/$where-write-qd1.fio" > /dev/null
done
for rep in 1 2 3; do
  for where in vda loop; do
    for qd in 1 8 32; do
      for rw in read write; do
        fio --output-format=json "$here/out/$where-$rw-qd$qd.fio" > "$here/out/$where-$rw-qd$qd.r$rep.json"
      done
    done
  done
done
python3 - "$here/out" > "$here/summary.txt" <<'PY'
import json, sys, glob, statistics as st
d = sys.argv[1]
print(f"{'run':<16}{'IOPS':>16}{'clat p50 us':>20}{'clat p99 us':>20}{'sys %':>8}")
for where in ("vda", "loop"):
    for qd in (1, 8, 32):
        for rw in ("read", "write"):
            runs = [json.load(open(p))["jobs"][0] for p in sorted(glob.glob(f"{d}/{where}-{rw}-qd{qd}.r*.json"))]
            io = [j[rw] for j in runs]
            iops = [x["iops"] for x in io]
            p50 = [x["clat_ns"]["percentile"]["50.000000"] / 1e3 for x in io]
            p99 = [x["clat_ns"]["percentile"]["99.000000"] / 1e3 for x in io]
            cpu = [j["sys_cpu"] for j in runs]
            r = lambda v, f: f"{f(st.median(v))} ({f(min(v))}-{f(max(v))})"
            print(f"{where + '-' + rw + '-qd' + str(qd):<16}{r(iops, lambda x: f'{x:.0f}'):>16}"
                  f"{r(p50, lambda x: f'{x:.0f}'):>20}{r(p99, lambda x: f'{x:.0f}'):>20}{st.median(cpu):>8.1f}")
PY
cat "$here/summary.txt"
