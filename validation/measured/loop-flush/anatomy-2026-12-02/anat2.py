import re,sys
ev=[]
for l in open(sys.argv[1]):
    m=re.search(r'\s(\d+\.\d+): (\w+): (\d+,\d+) (\S+) (?:\d+ )?\(\) (\d+)',l)
    if not m: continue
    ev.append((float(m.group(1)),m.group(2),m.group(3),m.group(4),int(m.group(5))))
# per loop FF: timeline of segments
rows=[]
open_ff=None
for i,e in enumerate(ev):
    t,n,d,rw,sec=e
    if d=='7,0' and rw=='FF' and n=='block_rq_issue': open_ff=(t,i)
    if d=='7,0' and rw=='FF' and n=='block_rq_complete' and open_ff:
        t0,i0=open_ff; seq=[]
        last=t0
        for f in ev[i0+1:i+1]:
            if f[2]=='254,0':
                seq.append('%s%s %+.0f'%('i' if f[1]=='block_rq_issue' else 'c', f[3], (f[0]-last)*1e6)); last=f[0]
        seq.append('loopdone %+.0f'%((t-last)*1e6))
        rows.append(((t-t0)*1e6,seq)); open_ff=None
import statistics as st
rows.sort()
for r in rows[len(rows)//2-3:len(rows)//2+3]: print('%.0f'%r[0], r[1])
# median per position
n=min(len(r[1]) for r in rows)
for k in range(len(rows[0][1])):
    vals=[float(r[1][k].split()[-1]) for r in rows if len(r[1])>k]
    vals.sort(); print(rows[0][1][k].split()[0], 'median us', vals[len(vals)//2])
