"""The steps of each fsync or fdatasync in an ftrace log: python3 steps.py <trace> [signatures].

Groups the fsyncs by the sequence of their events on 7,64 (block requests, jbd2 phases) and
prints, for the most common sequences, each step's median time from the step before and from
the fsync's entry, in microseconds.
"""
import re, sys, collections, statistics
seqs=[]; cur=None
for l in open(sys.argv[1]):
    m=re.match(r'\s*(\S+)-(\d+)\s+\[\d+\]\s+\S+\s+(\d+\.\d+): (\w+):? ?(.*)',l)
    if not m: continue
    comm,pid,t,ev,rest=m.group(1),m.group(2),float(m.group(3)),m.group(4),m.group(5)
    if re.search(r'sys_f(data)?sync(\(| ->)', l):
        if '->' in l:
            if cur: cur.append((t,'exit')); seqs.append(cur); cur=None
        else:
            cur=[(t,'enter')]
        continue
    if cur is None: continue
    if ev.startswith('block_'):
        mm=re.match(r'(\d+),(\d+) (\S+) \d+ \(\) (\d+) \+ (\d+)',rest) or re.match(r'(\d+),(\d+) (\S+) (\d+) \+ (\d+)',rest)
        if not mm: 
            mm2=re.match(r'(\d+),(\d+) (\S+)',rest)
            if not mm2: continue
            dev=mm2.group(1)+','+mm2.group(2); rw=mm2.group(3); n='0'
        else:
            dev=mm.group(1)+','+mm.group(2); rw=mm.group(3); n=mm.group(5)
        if dev!='7,64': continue
        lab='%s %s %s %s'%(ev[6:],rw,n,comm.split('/')[0][:8])
    elif ev.startswith('jbd2'):
        lab=ev
    else: continue
    cur.append((t,lab))
sig=collections.Counter(tuple(x[1] for x in s) for s in seqs)
print(len(seqs),'fsyncs;',len(sig),'signatures')
for sg,n in sig.most_common(int(sys.argv[2]) if len(sys.argv)>2 else 2):
    ss=[s for s in seqs if tuple(x[1] for x in s)==sg]
    print('--',n)
    for i,lab in enumerate(sg):
        d=[(s[i][0]-s[i-1][0])*1e6 if i else 0 for s in ss]
        tot=[(s[i][0]-s[0][0])*1e6 for s in ss]
        print('%7.0f %7.0f  %s'%(statistics.median(d),statistics.median(tot),lab))
