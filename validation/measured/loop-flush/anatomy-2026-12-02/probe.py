import os, time, sys
mode = sys.argv[1]; n = int(sys.argv[2]); gap = float(sys.argv[3])
fd = os.open('mnt/f-'+mode, os.O_WRONLY|os.O_CREAT)
buf = b'x'*4096
if mode == 'over':
    for i in range(64): os.pwrite(fd, buf, i*4096)
    os.fsync(fd); time.sleep(0.5)
lat=[]
for i in range(n):
    off = (i % 64)*4096 if mode=='over' else i*4096
    t0=time.perf_counter(); os.pwrite(fd, buf, off)
    t1=time.perf_counter(); os.fsync(fd) if mode!='fdata' else os.fdatasync(fd); t2=time.perf_counter()
    lat.append((t2-t1)*1e3); time.sleep(gap)
lat.sort(); print(mode, 'fsync ms p50 %.3f p90 %.3f'%(lat[len(lat)//2], lat[int(len(lat)*.9)]))
