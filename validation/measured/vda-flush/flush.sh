#!/bin/bash
# The host disk's flush as the guest sees it: fio's 4 KiB overwrites of a written file on vda,
# each followed by fdatasync (the guest's write, then a flush of vda: Firecracker fsyncs the
# image), and the same with O_DIRECT writes; sync latency percentiles. Root not needed; removes
# its file.
set -u
D=${1:-/var/tmp}/wblab-flush-$$
mkdir -p $D; trap 'rm -rf $D' EXIT
dd if=/dev/urandom of=$D/f bs=1M count=64 status=none; sync
OUT=${OUT:-/tmp}
for rep in 1 2 3; do for mode in buffered direct; do
  extra=""; [ $mode = direct ] && extra="--direct=1"
  fio --name=f --filename=$D/f --size=64m --rw=randwrite --bs=4k --ioengine=psync --fdatasync=1 $extra --runtime=8 --time_based --output-format=json > $OUT/flush-$mode-$rep.json
  python3 -c "
import json; j=json.load(open('$OUT/flush-$mode-$rep.json'))['jobs'][0]
s=j['sync']['lat_ns']; p=s['percentile']; w=j['write']['clat_ns']['percentile']
print('$mode $rep syncs %d  sync p50 %.0f p90 %.0f p99 %.0f p99.9 %.0f max %.0f us   write p50 %.0f p99 %.0f us'%(s['N'],p['50.000000']/1e3,p['90.000000']/1e3,p['99.000000']/1e3,p['99.900000']/1e3,s['max']/1e3,w['50.000000']/1e3,w['99.000000']/1e3))"
done; done
