"""From an fsync's data write to its commit: python3 wakeups.py <trace with sched events>.

After each completion of a write on 7,64, when the fsync task (`fsync2`) is woken, when it
runs, when it wakes the journal thread, when that runs and starts the commit: medians, µs.
"""
import re, sys, statistics
L=[]
for l in open(sys.argv[1]):
    m=re.match(r'\s*(\S+)-(\d+)\s+\[(\d+)\]\s+\S+\s+(\d+\.\d+): (\w+): (.*)',l)
    if m: L.append((float(m.group(4)),m.group(1),m.group(5),m.group(6)))
res={'c->wake':[],'wake->run':[],'run->jwake':[],'jwake->jrun':[],'jrun->start':[]}
i=0
while i<len(L):
    t,comm,ev,rest=L[i]
    if ev=='block_rq_complete' and rest.startswith('7,64 WS') and i>0:
        # is it the fsync2 data write? find the next start_commit within 1 ms and events between
        st={'c':t}
        j=i+1
        while j<len(L) and L[j][0]-t<0.002:
            tj,cj,ej,rj=L[j]
            if ej=='sched_wakeup' and 'fsync2' in rj and 'wake' not in st: st['wake']=tj
            elif ej=='sched_switch' and 'next_comm=fsync2' in rj and 'wake' in st and 'run' not in st: st['run']=tj
            elif ej=='sched_wakeup' and 'jbd2' in rj and 'run' in st and 'jwake' not in st: st['jwake']=tj
            elif ej=='sched_switch' and 'next_comm=jbd2' in rj and 'jwake' in st and 'jrun' not in st: st['jrun']=tj
            elif ej=='jbd2_start_commit':
                st['start']=tj; break
            j+=1
        if all(k in st for k in ['wake','run','jwake','jrun','start']):
            res['c->wake'].append(st['wake']-st['c']); res['wake->run'].append(st['run']-st['wake'])
            res['run->jwake'].append(st['jwake']-st['run']); res['jwake->jrun'].append(st['jrun']-st['jwake'])
            res['jrun->start'].append(st['start']-st['jrun'])
    i+=1
for k,v in res.items():
    if v: print('%-12s n=%4d p50 %6.1f us'%(k,len(v),statistics.median(v)*1e6))
