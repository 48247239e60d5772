//! Sending answers. Writing an answer to /dev/fuse runs the kernel's completion of the
//! request in the writer's context (the loop driver's end of I/O, the bio's, the pages'),
//! which takes tens to hundreds of microseconds; done on the model's thread, it would make
//! the next answers late. So the model's thread hands each answer to these threads.

use crate::clock::{self, Clock};
use crate::queue::{queue, Receiver, Sender};
use crate::server::{Answer, Shared};
use crate::stats::Record;
use std::io::{self, Write};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use wblab_sim::Ns;

/// Threads sending answers: two, so that one answer's completion work does not hold the
/// next.
const THREADS: usize = 2;

/// An answer on its way, with its record (sent time and lateness filled in when sent).
pub(crate) struct Outgoing {
    pub answer: Answer,
    pub rec: Record,
    /// When the model wants it to leave.
    pub due: Ns,
}

pub(crate) struct Repliers {
    threads: Vec<JoinHandle<()>>,
}

type Log = Arc<Mutex<Option<io::BufWriter<std::fs::File>>>>;

impl Repliers {
    /// Start the threads; they stop once every sender of the returned channel is gone.
    pub(crate) fn start(clock: Clock, shared: Arc<Shared>, log: Option<std::fs::File>) -> io::Result<(Repliers, Sender<Outgoing>)> {
        let (tx, rx) = queue::<Outgoing>();
        let rx = Arc::new(Mutex::new(rx));
        let log: Log = Arc::new(Mutex::new(log.map(|f| {
            let mut w = io::BufWriter::new(f);
            let _ = writeln!(w, "{}", Record::CSV_HEADER);
            w
        })));
        let mut threads = Vec::with_capacity(THREADS);
        for i in 0..THREADS {
            let (rx, shared, log) = (rx.clone(), shared.clone(), log.clone());
            threads.push(
                std::thread::Builder::new()
                    .name(format!("wblab-answer{i}"))
                    .spawn(move || run(&rx, clock, &shared, &log))?,
            );
        }
        Ok((Repliers { threads }, tx))
    }

    /// Wait for the threads (after the senders are gone).
    pub(crate) fn join(self) {
        for t in self.threads {
            let _ = t.join();
        }
    }
}

fn run(rx: &Mutex<Receiver<Outgoing>>, clock: Clock, shared: &Shared, log: &Log) {
    clock::io_flusher();
    clock::real_time(clock::Role::Answer);
    loop {
        let next = rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
        let Some(Outgoing { answer, mut rec, due }) = next else { break };
        rec.answered = clock.now();
        rec.late = rec.answered.saturating_sub(due);
        answer.send();
        shared.stats.lock().unwrap_or_else(|e| e.into_inner()).add(&rec);
        if let Some(w) = log.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            let _ = writeln!(w, "{}", rec.csv());
        }
    }
    if let Some(w) = log.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
        let _ = w.flush();
    }
}
