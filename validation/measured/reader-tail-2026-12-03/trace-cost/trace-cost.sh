#!/bin/bash
# Costs of tracing a reader beside a copy: fio 4 KiB O_DIRECT random reads on a fresh loop device
# while a buffered dd writes, with no block events, the requests' issue and completion, or the
# whole block trace enabled in a private tracefs instance, drained by a blocking reader (cat),
# by a non-blocking poll every 20 ms (as `wblab measure` drains it) or not at all. Root;
# makes and removes its loop device, mounts and instance; DIRTY=bytes sets vm.dirty_bytes
# (restored), REPS and MODES choose the runs.
# Cost of block tracing on a reader's tail beside a copy on a loop device.
set -u
S=/var/tmp/wbtail; T=$S/tracefs/instances/wbtail
cleanup() {
  [ -d $T ] && { echo 0 > $T/tracing_on; echo > $T/set_event; rmdir $T; }
  pkill -f "cat $T/trace_pipe" 2>/dev/null
  mountpoint -q $S/mnt && umount $S/mnt
  mountpoint -q $S/tracefs && umount $S/tracefs
  [ -n "${LOOP:-}" ] && losetup -d $LOOP
  rm -rf $S
}
OLD_DB=$(cat /proc/sys/vm/dirty_bytes); OLD_DBB=$(cat /proc/sys/vm/dirty_background_bytes)
OLD_DR=$(cat /proc/sys/vm/dirty_ratio); OLD_DBR=$(cat /proc/sys/vm/dirty_background_ratio)
restore() { cleanup; if [ "$OLD_DB" != 0 ]; then echo $OLD_DB > /proc/sys/vm/dirty_bytes; else echo $OLD_DR > /proc/sys/vm/dirty_ratio; fi
  if [ "$OLD_DBB" != 0 ]; then echo $OLD_DBB > /proc/sys/vm/dirty_background_bytes; else echo $OLD_DBR > /proc/sys/vm/dirty_background_ratio; fi; }
trap restore EXIT
if [ -n "${DIRTY:-}" ]; then echo $DIRTY > /proc/sys/vm/dirty_bytes; echo $((DIRTY/2)) > /proc/sys/vm/dirty_background_bytes; fi
mkdir -p $S/mnt $S/tracefs; mount -t tracefs nodev $S/tracefs; fallocate -l 16G $S/img; mkfs.ext4 -q $S/img
LOOP=$(losetup --direct-io=on -f --show $S/img); mount $LOOP $S/mnt
MM=$(stat -c '%t %T' $LOOP); MAJ=$((16#${MM% *})); MIN=$((16#${MM#* })); DEV=$(( (MAJ<<20) | MIN ))
dd if=/dev/urandom of=$S/mnt/db bs=1M count=1024 oflag=direct status=none
OUT=${OUT:-/tmp/wblab-trace-cost}; mkdir -p $OUT
for rep in $(seq ${REPS:-4}); do for mode in ${MODES:-off req all}; do
  mkdir $T; echo 65536 > $T/buffer_size_kb
  case $mode in
    req) evs="block_rq_issue block_rq_complete";;
    all) evs="block_bio_queue block_split block_bio_backmerge block_bio_frontmerge block_getrq block_rq_insert block_rq_issue block_rq_complete";;
    off) evs="";;
    reqnd) evs="block_rq_issue block_rq_complete";;
    reqpoll) evs="block_rq_issue block_rq_complete";;
  esac
  for e in $evs; do echo "dev == $DEV" > $T/events/block/$e/filter; echo 1 > $T/events/block/$e/enable; done
  echo 1 > $T/tracing_on
  case $mode in reqnd) sleep 1000 & CATP=$!;; reqpoll) python3 "$(dirname "$0")"/poll.py $T/trace_pipe & CATP=$!;; *) cat $T/trace_pipe > /dev/null & CATP=$!;; esac
  sync; echo 3 > /proc/sys/vm/drop_caches
  dd if=/dev/zero of=$S/mnt/big bs=1M count=6144 status=none & DDP=$!
  sleep 2
  fio --name=r --filename=$S/mnt/db --rw=randread --bs=4k --direct=1 --ioengine=psync --runtime=8 --time_based --output-format=json > $OUT/$mode-$rep.json
  kill $DDP 2>/dev/null; wait $DDP 2>/dev/null
  kill $CATP; wait $CATP 2>/dev/null
  echo 0 > $T/tracing_on; for e in $evs; do echo 0 > $T/events/block/$e/enable; done; rmdir $T
  rm -f $S/mnt/big; sync
  python3 -c "
import json,sys; j=json.load(open('$OUT/$mode-$rep.json'))['jobs'][0]['read']
p=j['clat_ns']['percentile']; print('$mode $rep iops %.0f p50 %.3f p99 %.3f ms'%(j['iops'],p['50.000000']/1e6,p['99.000000']/1e6))"
done; done
