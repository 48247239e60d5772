import re,sys,statistics as st
ev=[]
for l in open(sys.argv[1]):
    m=re.search(r'\s(\d+\.\d+): (\w+): (\d+,\d+) (\S+) (.*)',l)
    if not m: continue
    t=float(m.group(1)); name=m.group(2); dev=m.group(3); rw=m.group(4); rest=m.group(5)
    ev.append((t,name,dev,rw,rest,l))
# loop flushes: issue FF on 7,0 -> complete FF on 7,0
out=[]
open_ff=None
for i,(t,n,d,rw,rest,l) in enumerate(ev):
    if d=='7,0' and rw=='FF' and n=='block_rq_issue': open_ff=(t,i)
    if d=='7,0' and rw=='FF' and n=='block_rq_complete' and open_ff:
        t0,i0=open_ff; vda=[e for e in ev[i0:i+1] if e[2]=='254,0' and e[1]=='block_rq_issue']
        kinds=' '.join(e[3] for e in vda)
        out.append(((t-t0)*1e3,kinds))
        open_ff=None
from collections import defaultdict
g=defaultdict(list)
for ms,k in out: g[k].append(ms)
for k,v in sorted(g.items(), key=lambda x:-len(x[1])):
    v.sort(); print('%4d  p50 %.3f ms  p90 %.3f  vda: %s'%(len(v), v[len(v)//2], v[int(len(v)*.9)], k))
