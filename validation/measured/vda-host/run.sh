#!/bin/sh
# The host disk behind this lab's loop devices (`vda`, a virtio disk of a Firecracker guest):
# how its reads and writes share it. Run as root on an otherwise quiet machine:
#   validation/measured/vda-host/run.sh [DIR]   (DIR on vda; default /var/tmp/wblab-vda)
# Writes fio's JSON to ./out and ./summary.txt; removes its two 1 GiB files after.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:-/var/tmp/wblab-vda}
mkdir -p "$dir" "$here/out"
trap 'rm -f "$dir/rfile" "$dir/wfile"; rmdir "$dir" 2>/dev/null || true' EXIT
job() { # name, reader (bs or -), writer bs (or -), writer depth, extra writer options
  name=$1; rbs=$2; wbs=$3; wqd=$4; wextra=$5
  {
    printf '[global]\ndirect=1\ntime_based=1\nruntime=8\nsize=1g\n'
    if [ "$rbs" != - ]; then printf '[reader]\nioengine=psync\nfilename=%s/rfile\nrw=randread\nbs=%s\n' "$dir" "$rbs"; fi
    if [ "$wbs" != - ]; then printf '[writer]\nioengine=io_uring\niodepth=%s\nfilename=%s/wfile\nrw=randwrite\nbs=%s\n%s\n' "$wqd" "$dir" "$wbs" "$wextra"; fi
  } > "$here/out/$name.fio"
}
job read64k 64k - 1 ''
job read4k 4k - 1 ''
job mix64k-w64k 64k 64k 32 ''
job mix64k-w64k-500m 64k 64k 32 'rate=500m'
job mix64k-w4k 64k 4k 32 ''
job mix64k-w1m 64k 1m 32 ''
job mix4k-w1m 4k 1m 32 ''
job seqread1m - - 1 ''
printf '[global]\ndirect=1\ntime_based=1\nruntime=4\nsize=1g\n[r]\nioengine=io_uring\niodepth=32\nfilename=%s/rfile\nrw=read\nbs=1m\n' "$dir" > "$here/out/seqread1m.fio"
printf '[global]\ndirect=1\ntime_based=1\nruntime=4\nsize=1g\n[w]\nioengine=io_uring\niodepth=32\nfilename=%s/wfile\nrw=write\nbs=1m\n' "$dir" > "$here/out/seqwrite1m.fio"
printf '[global]\ndirect=1\ntime_based=1\nruntime=4\nsize=1g\n[w]\nioengine=io_uring\niodepth=32\nfilename=%s/wfile\nrw=randwrite\nbs=4k\n' "$dir" > "$here/out/write4k-qd32.fio"
fio --create_only=1 "$here/out/mix64k-w64k.fio" > /dev/null
for rep in 1 2 3; do
  for f in read64k read4k mix64k-w64k mix64k-w64k-500m mix64k-w4k mix64k-w1m mix4k-w1m seqread1m seqwrite1m write4k-qd32; do
    fio --output-format=json "$here/out/$f.fio" > "$here/out/$f.r$rep.json"
  done
done
python3 "$here/summarize.py" "$here/out" > "$here/summary.txt"
cat "$here/summary.txt"
