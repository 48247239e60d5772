#!/bin/bash
# A WAL (4 KiB writes + fdatasync, overwrite) beside a buffered 1 MiB copy on ext4 on a fresh
# direct-I/O loop device, as validation v24, with block:block_rq_{insert,issue,complete} and
# block_bio_queue traced on every device for one second in the middle (a tracefs instance).
# Root, quiet machine. Restores the dirty sysctls, removes the loop, the trace instance and the
# scratch directory, and unmounts tracefs if it mounted it. Writes trace.txt and fio.json here.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
S=/var/tmp/wblab-walcopy
mkdir -p $S
old_ratio=$(sysctl -n vm.dirty_ratio); old_bg_ratio=$(sysctl -n vm.dirty_background_ratio)
old_bytes=$(sysctl -n vm.dirty_bytes); old_bg_bytes=$(sysctl -n vm.dirty_background_bytes)
mounted=0; L=; T=/sys/kernel/tracing/instances/wblab-walcopy
cleanup() {
  [ -d $T ] && rmdir $T
  [ $mounted = 1 ] && umount /sys/kernel/tracing
  if [ "$old_bytes" != 0 ]; then sysctl -q vm.dirty_bytes=$old_bytes; else sysctl -q vm.dirty_ratio=$old_ratio; fi
  if [ "$old_bg_bytes" != 0 ]; then sysctl -q vm.dirty_background_bytes=$old_bg_bytes; else sysctl -q vm.dirty_background_ratio=$old_bg_ratio; fi
  mountpoint -q $S/mnt && umount $S/mnt
  [ -n "$L" ] && losetup -d $L
  rm -rf $S
}
trap cleanup EXIT
fallocate -l 2G $S/img
L=$(losetup --direct-io=on -f --show $S/img)
mkfs.ext4 -q -F $L; mkdir -p $S/mnt; mount $L $S/mnt
printf '[global]\ndirectory=%s/mnt\n[wal]\nrw=write\nbs=4k\nsize=64m\nioengine=psync\nruntime=6\ntime_based\nfdatasync=1\noverwrite=1\n[copy]\nrw=write\nbs=1m\nsize=1g\nioengine=psync\nruntime=6\ntime_based\n' $S > $S/job.fio
sysctl -q vm.dirty_bytes=268435456 vm.dirty_background_bytes=134217728
mountpoint -q /sys/kernel/tracing || { mount -t tracefs nodev /sys/kernel/tracing; mounted=1; }
mkdir $T; echo 65536 > $T/buffer_size_kb
for e in block_rq_insert block_rq_issue block_rq_complete block_bio_queue; do echo 1 > $T/events/block/$e/enable; done
fio $S/job.fio --output-format=json --output=$here/fio.json &
sleep 3; echo 1 > $T/tracing_on; : > $T/trace; sleep 1; echo 0 > $T/tracing_on
cat $T/trace > $here/trace.txt
wait
