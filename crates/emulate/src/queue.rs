//! The queues between the emulator's threads: a mutex and a condition variable, so that a
//! thread waiting for a message sleeps.
//!
//! Why not `std::sync::mpsc` (or crossbeam's, which it is): their unbounded channel makes a
//! receiver, and a sender reaching the end of a block, spin with `sched_yield` while another
//! sender is halfway through installing the next block. The emulator's threads run at
//! real-time priorities (`SCHED_FIFO`: the model above the answers above the FUSE threads), and
//! `sched_yield` gives the processor only to threads of the same priority: the model spinning
//! on a FUSE thread it preempted midway through a send never lets it finish. On a 2-CPU
//! machine under load (both CPUs held by spinning FIFO threads) the device stopped answering for
//! good. A sleeping wait on a futex lets the preempted thread run; std's mutex spins only a
//! bounded hundred times before it sleeps.

use std::collections::VecDeque;
use std::sync::mpsc::RecvTimeoutError;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

struct State<T> {
    items: VecDeque<T>,
    senders: usize,
}

struct Inner<T> {
    state: Mutex<State<T>>,
    ready: Condvar,
}

impl<T> Inner<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The sending side; cloned for each sender. The receiver sees the queue closed once every
/// clone is gone and the queue is empty.
pub(crate) struct Sender<T> {
    inner: Arc<Inner<T>>,
}

/// The receiving side (one thread at a time; share it behind a mutex for several).
pub(crate) struct Receiver<T> {
    inner: Arc<Inner<T>>,
}

/// A queue with no bound.
pub(crate) fn queue<T>() -> (Sender<T>, Receiver<T>) {
    let inner = Arc::new(Inner {
        state: Mutex::new(State {
            items: VecDeque::new(),
            senders: 1,
        }),
        ready: Condvar::new(),
    });
    (Sender { inner: inner.clone() }, Receiver { inner })
}

impl<T> Sender<T> {
    /// Queue `item`; never blocks for long (the mutex is held only to push or pop).
    pub(crate) fn send(&self, item: T) {
        self.inner.lock().items.push_back(item);
        self.inner.ready.notify_one();
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        self.inner.lock().senders += 1;
        Sender { inner: self.inner.clone() }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        self.inner.lock().senders -= 1;
        self.inner.ready.notify_all();
    }
}

impl<T> Receiver<T> {
    /// The next item, sleeping until one comes; None once the queue is closed and empty.
    pub(crate) fn recv(&self) -> Option<T> {
        let mut s = self.inner.lock();
        loop {
            if let Some(item) = s.items.pop_front() {
                return Some(item);
            }
            if s.senders == 0 {
                return None;
            }
            s = self.inner.ready.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// The next item, sleeping at most `timeout` for one.
    pub(crate) fn recv_timeout(&self, timeout: Duration) -> Result<T, RecvTimeoutError> {
        let deadline = Instant::now() + timeout;
        let mut s = self.inner.lock();
        loop {
            if let Some(item) = s.items.pop_front() {
                return Ok(item);
            }
            if s.senders == 0 {
                return Err(RecvTimeoutError::Disconnected);
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(RecvTimeoutError::Timeout);
            }
            s = self
                .inner
                .ready
                .wait_timeout(s, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// An item if one is queued now.
    pub(crate) fn try_recv(&self) -> Option<T> {
        self.inner.lock().items.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_come_in_order_and_the_queue_closes_with_its_last_sender() {
        let (tx, rx) = queue();
        let tx2 = tx.clone();
        let t = std::thread::spawn(move || {
            for i in 0..1000 {
                tx2.send(i);
            }
        });
        t.join().unwrap();
        tx.send(1000);
        let got: Vec<i32> = std::iter::from_fn(|| rx.try_recv()).collect();
        assert_eq!(got, (0..=1000).collect::<Vec<_>>());
        assert_eq!(rx.recv_timeout(Duration::from_millis(10)), Err(RecvTimeoutError::Timeout));
        drop(tx);
        assert_eq!(rx.recv(), None);
        assert_eq!(rx.recv_timeout(Duration::from_millis(10)), Err(RecvTimeoutError::Disconnected));
    }

    #[test]
    fn a_sleeping_receiver_wakes_for_an_item() {
        let (tx, rx) = queue();
        let t = std::thread::spawn(move || rx.recv_timeout(Duration::from_secs(10)));
        std::thread::sleep(Duration::from_millis(50));
        tx.send(7u8);
        assert_eq!(t.join().unwrap(), Ok(7));
    }
}
