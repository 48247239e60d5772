import os,sys,time
fd=os.open(sys.argv[1],os.O_RDONLY|os.O_NONBLOCK)
while True:
    try:
        b=os.read(fd,65536)
        if b: continue
    except BlockingIOError: pass
    time.sleep(0.02)
