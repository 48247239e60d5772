/* flush_probe: cost of a cache flush (fsync) of a block device after N MiB of O_DIRECT writes.
 *
 * usage: flush_probe DEV OFFSET_MIB N_MIB [QD]
 *
 * Opens DEV (a loop device, or a regular file) O_DIRECT|O_WRONLY and fsyncs it once (drains
 * whatever was written before: the "previous flush"). Then writes N_MIB MiB sequentially in
 * 1 MiB writes starting at OFFSET_MIB, times fsync(fd) (on a block device: blkdev_fsync ->
 * REQ_PREFLUSH; on a loop device lo_req_flush -> vfs_fsync of the backing file) and a second
 * fsync right after it with nothing new written.
 *
 * QD = 1 (default): synchronous pwrite()s, so nothing is in flight when the fsync starts.
 *   prints: pre_fsync_ms write_ms fsync_ms second_fsync_ms
 * QD > 1: Linux AIO, up to QD writes in flight; the fsync is called right after the last
 *   write is submitted, with up to QD writes still in flight (a flush behind a backlog).
 *   prints: pre_fsync_ms submit_ms fsync_ms second_fsync_ms inflight_at_fsync last_write_done_ms
 *   where last_write_done_ms is when the last write completed, from the fsync call.
 *
 * Build: gcc -O2 -Wall -o flush_probe flush_probe.c
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MIB (1L << 20)

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* Reap at least min completions; returns how many. */
static int reap(aio_context_t ctx, int min, int max)
{
	struct io_event ev[256];
	if (max > 256)
		max = 256;
	int got = syscall(SYS_io_getevents, ctx, min, max, ev, NULL);
	if (got < 0)
		die("io_getevents");
	for (int i = 0; i < got; i++)
		if (ev[i].res != MIB) {
			fprintf(stderr, "aio write: res %lld\n", (long long)ev[i].res);
			exit(1);
		}
	return got;
}

int main(int argc, char **argv)
{
	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: %s DEV OFFSET_MIB N_MIB [QD]\n", argv[0]);
		return 2;
	}
	long long off = atoll(argv[2]), n = atoll(argv[3]);
	int qd = argc == 5 ? atoi(argv[4]) : 1;
	if (qd < 1 || qd > 256)
		qd = 1;
	int fd = open(argv[1], O_WRONLY | O_DIRECT);
	if (fd < 0)
		die("open");
	char *buf;
	if (posix_memalign((void **)&buf, 4096, (size_t)qd * MIB))
		die("posix_memalign");
	memset(buf, 0xa5, (size_t)qd * MIB); /* non-zero data */

	double t0 = now_ms();
	if (fsync(fd))
		die("fsync");
	double t1 = now_ms();

	if (qd == 1) {
		for (long long i = 0; i < n; i++) {
			((long long *)buf)[0] = i;
			if (pwrite(fd, buf, MIB, (off + i) * MIB) != MIB)
				die("pwrite");
		}
		double t2 = now_ms();
		if (fsync(fd))
			die("fsync");
		double t3 = now_ms();
		if (fsync(fd))
			die("fsync");
		double t4 = now_ms();
		printf("%.3f %.3f %.3f %.3f\n", t1 - t0, t2 - t1, t3 - t2, t4 - t3);
		return 0;
	}

	aio_context_t ctx = 0;
	if (syscall(SYS_io_setup, qd, &ctx))
		die("io_setup");
	struct iocb *cbs = calloc(qd, sizeof(*cbs));
	int inflight = 0;
	for (long long i = 0; i < n; i++) {
		if (inflight == qd)
			inflight -= reap(ctx, 1, qd);
		/* slots are reused round-robin: with at most qd in flight slot i%qd is free */
		struct iocb *cb = &cbs[i % qd];
		memset(cb, 0, sizeof(*cb));
		cb->aio_fildes = fd;
		cb->aio_lio_opcode = IOCB_CMD_PWRITE;
		cb->aio_buf = (uint64_t)(uintptr_t)(buf + (i % qd) * MIB);
		cb->aio_nbytes = MIB;
		cb->aio_offset = (off + i) * MIB;
		struct iocb *p = cb;
		if (syscall(SYS_io_submit, ctx, 1, &p) != 1)
			die("io_submit");
		inflight++;
	}
	double t2 = now_ms();
	int at_fsync = inflight;
	if (fsync(fd))
		die("fsync");
	double t3 = now_ms();
	while (inflight > 0)
		inflight -= reap(ctx, inflight, inflight);
	double t5 = now_ms();
	if (fsync(fd))
		die("fsync");
	double t4 = now_ms();
	printf("%.3f %.3f %.3f %.3f %d %.3f\n", t1 - t0, t2 - t1, t3 - t2, t4 - t5, at_fsync, t5 - t2);
	syscall(SYS_io_destroy, ctx);
	return 0;
}
