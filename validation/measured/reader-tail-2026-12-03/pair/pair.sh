#!/bin/bash
# Two queue-depth-1 O_DIRECT readers (4 KiB random, 64 KiB sequential) alone and together, on
# a file on a fresh loop device and on a file on the host disk (vda) itself. Root; removes what
# it makes.
# Two qd1 direct readers together vs alone, on a loop device and on vda's file system directly.
set -u
S=/var/tmp/wbpair
cleanup() { mountpoint -q $S/mnt && umount $S/mnt; [ -n "${LOOP:-}" ] && losetup -d $LOOP; rm -rf $S; }
trap cleanup EXIT
mkdir -p $S/mnt $S/raw; fallocate -l 8G $S/img; mkfs.xfs -q $S/img
LOOP=$(losetup --direct-io=on -f --show $S/img); mount $LOOP $S/mnt
for d in $S/mnt $S/raw; do
  dd if=/dev/urandom of=$d/a bs=1M count=256 oflag=direct status=none
  dd if=/dev/urandom of=$d/b bs=1M count=256 oflag=direct status=none
done
R4="--name=r4 --filename=FILE/a --rw=randread --bs=4k"
S64="--name=s64 --filename=FILE/b --rw=read --bs=64k"
COMMON="--direct=1 --ioengine=psync --iodepth=1 --runtime=5 --time_based --output-format=json"
for rep in 1 2; do for where in loop raw; do
  [ $where = loop ] && D=$S/mnt || D=$S/raw
  for what in r4 s64 both; do
    case $what in r4) J="${R4//FILE/$D}";; s64) J="${S64//FILE/$D}";; both) J="${R4//FILE/$D} ${S64//FILE/$D}";; esac
    fio $COMMON $J > ${OUT:-/tmp}/pair-$where-$what-$rep.json
    python3 -c "
import json; j=json.load(open('${OUT:-/tmp}/pair-$where-$what-$rep.json'))
print('$where $what $rep', ' '.join('%s: %.0f IOPS mean %.0f us p99 %.0f us'%(x['jobname'],x['read']['iops'],x['read']['clat_ns']['mean']/1e3,x['read']['clat_ns']['percentile']['99.000000']/1e3) for x in j['jobs']))"
  done; done; done
