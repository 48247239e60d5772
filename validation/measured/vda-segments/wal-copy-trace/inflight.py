"""What the 4 KiB writes met on vda in trace.txt(.gz): requests and bytes in flight when each was
issued, its latency by how many MiB were ahead of it, and vda's write rate while busy."""
import collections, gzip, re, sys
rx = re.compile(r'\s(\d+\.\d+): (block_rq_\w+): (\d+,\d+) (\S+) (?:(\d+) \(\) )?(?:\(\) )?(\d+) \+ (\d+)')
path = sys.argv[1] if len(sys.argv) > 1 else 'trace.txt.gz'
lines = gzip.open(path, 'rt') if path.endswith('.gz') else open(path)
issued, n_in, bytes_in, most, rows, spans = {}, 0, 0, 0, [], []
for line in lines:
    m = rx.search(line)
    if not m or m.group(3) != '254,0' or 'W' not in m.group(4) or int(m.group(7)) == 0:
        continue
    t, ev, sector, n = float(m.group(1)), m.group(2), int(m.group(6)), int(m.group(7))
    if ev == 'block_rq_issue':
        issued[sector] = (t, n, bytes_in)
        n_in += 1; bytes_in += n * 512; most = max(most, n_in)
    elif ev == 'block_rq_complete' and sector in issued:
        t0, nn, ahead = issued.pop(sector)
        n_in -= 1; bytes_in -= nn * 512
        spans.append((t0, t, nn * 512))
        if nn == 8:
            rows.append((ahead / 2**20, (t - t0) * 1e3))
print(f'most writes in flight on vda: {most}')
by = collections.defaultdict(list)
for mib, ms in rows:
    by[min(int(mib // 4) * 4, 36)].append(ms)
for k in sorted(by):
    v = sorted(by[k])
    print(f'4 KiB writes with >= {k:2d} MiB ahead: {len(v):5d}, latency p50 {v[len(v)//2]:.3f} ms')
ev = sorted([(a, 1, 0) for a, _, _ in spans] + [(b, -1, s) for _, b, s in spans])
busy, last, depth, done = 0.0, 0.0, 0, 0
for t, d, s in ev:
    if depth > 0:
        busy += t - last
    last, depth, done = t, depth + d, done + s
print(f'vda busy {busy:.3f} s of {ev[-1][0] - ev[0][0]:.3f}; {done / 2**20 / busy:.0f} MiB/s while busy')
