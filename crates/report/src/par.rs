//! Independent pieces of work spread over the machine's cores, results in input order: each
//! piece (a simulation, a chart) is deterministic on its own, so the output does not depend on
//! which core took it.

use std::sync::atomic::{AtomicUsize, Ordering};

/// `f` of every item, computed by up to `max_workers` threads (at most one per core), in the
/// order of `items`.
pub fn map_in_order<T: Sync, R: Send>(items: &[T], max_workers: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let workers = cores.min(max_workers).min(items.len()).max(1);
    let next = AtomicUsize::new(0);
    let mut done: Vec<(usize, R)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(i) else { break };
                        mine.push((i, f(item)));
                    }
                    mine
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    done.sort_by_key(|d| d.0);
    done.into_iter().map(|d| d.1).collect()
}

#[cfg(test)]
mod tests {
    use super::map_in_order;

    #[test]
    fn results_come_back_in_input_order() {
        let items: Vec<u64> = (0..100).collect();
        // Uneven work, so threads finish out of order.
        let out = map_in_order(&items, 4, |&x| {
            let mut a = 0u64;
            for i in 0..(100 - x) * 1000 {
                a = a.wrapping_add(i);
            }
            std::hint::black_box(a);
            x * 2
        });
        assert_eq!(out, items.iter().map(|x| x * 2).collect::<Vec<_>>());
        assert!(map_in_order(&[] as &[u64], 4, |&x| x).is_empty());
    }
}
