#!/bin/sh
# How the host behind this lab's `vda` prices a request: by its bytes or by its segments.
# The same O_DIRECT requests from fio's default buffers (malloc: every 4 KiB page its own
# segment, one ring descriptor each) and from huge-page buffers (iomem=shmhuge: a 2 MiB page is
# one physically contiguous segment), as a loop device's writeback of large folios sends them.
# Run as root on an otherwise quiet machine:
#   validation/measured/vda-segments/run.sh [DIR]   (DIR on vda; default /var/tmp/wblab-vdaseg)
# Reserves 160 huge pages (320 MiB) for the runs and gives back the count it found; writes
# fio's JSON to ./out and ./summary.txt; removes its 1 GiB file after.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:-/var/tmp/wblab-vdaseg}
hp=/proc/sys/vm/nr_hugepages
old=$(cat $hp)
mkdir -p "$dir" "$here/out"
trap 'echo "$old" > $hp; rm -f "$dir/file"; rmdir "$dir" 2>/dev/null || true' EXIT
echo 160 > $hp
[ "$(cat $hp)" -ge 160 ] || { echo "could not reserve 160 huge pages" >&2; exit 1; }
job() { # name, rw, bs, depth, iomem
  printf '[global]\ndirect=1\ntime_based=1\nruntime=4\nsize=1g\nfilename=%s/file\n[j]\nioengine=io_uring\nrw=%s\nbs=%s\niodepth=%s\niomem=%s\n' \
    "$dir" "$2" "$3" "$4" "$5" > "$here/out/$1.fio"
}
names=""
for rw in write read; do
  for bs in 64k 256k 1m; do
    for mem in malloc shmhuge; do
      for qd in 1 32; do
        n=$rw-$bs-$mem-qd$qd; job "$n" "$rw" "$bs" "$qd" "$mem"; names="$names $n"
      done
    done
  done
done
fio --create_only=1 "$here/out/write-64k-malloc-qd1.fio" > /dev/null
for rep in 1 2 3; do
  for n in $names; do
    fio --output-format=json "$here/out/$n.fio" > "$here/out/$n.r$rep.json"
  done
done
python3 "$here/../vda-host/summarize.py" "$here/out" > "$here/summary.txt"
cat "$here/summary.txt"
