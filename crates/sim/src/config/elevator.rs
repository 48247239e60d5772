//! The I/O schedulers a queue can run and their `queue/iosched/` tunables.

use crate::Ns;
use serde::Serialize;

/// An I/O scheduler, by the name `queue/scheduler` shows. Each is one file under
/// `block/sched/` that declares itself (`ElevatorInfo`: tunables, kernels, constructor), and
/// `block::sched::ELEVATORS` lists them; the constants below are the ones the kernel
/// generations name as their defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SchedulerKind(pub &'static str);

impl SchedulerKind {
    pub const NONE: Self = SchedulerKind("none");
    pub const MQ_DEADLINE: Self = SchedulerKind("mq-deadline");
    pub const KYBER: Self = SchedulerKind("kyber");
    pub const BFQ: Self = SchedulerKind("bfq");
    /// The 2002 deadline scheduler (2.5.38 + the deadline patch, 2.5.39-2.5.56).
    pub const DEADLINE_2002: Self = SchedulerKind("deadline-2002");
    /// The 2.6 deadline scheduler (rbtree rewrite, 2.5.57 to about 2.6.23).
    pub const DEADLINE_26: Self = SchedulerKind("deadline-2.6");
    /// CFQ as in 2.6.18–2.6.21 (`block/cfq-iosched.c` of 2.6.20).
    pub const CFQ_2620: Self = SchedulerKind("cfq-2.6.20");
    /// CFQ after the 2.6.22 service-tree rework, through about 2.6.28.
    pub const CFQ_2622: Self = SchedulerKind("cfq-2.6.22");

    pub fn name(&self) -> &'static str {
        self.0
    }
}

impl Serialize for SchedulerKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0)
    }
}

/// `/sys/block/<dev>/queue/iosched/` of CFQ (2.6.18–2.6.31 defaults; sysfs shows times in ms).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct CfqTunables {
    /// Requests one queue moves to the driver per dispatch round (`cfq_quantum`).
    pub quantum: u32,
    pub fifo_expire_sync: Ns,
    pub fifo_expire_async: Ns,
    /// How far back (KiB) the next request may lie and still be taken in sort order.
    pub back_seek_max_kb: u64,
    /// Cost factor of a backward seek against a forward one.
    pub back_seek_penalty: u64,
    pub slice_sync: Ns,
    pub slice_async: Ns,
    /// Base of the async request budget per slice (`cfq_prio_to_maxrq`).
    pub slice_async_rq: u32,
    /// How long an emptied sync queue waits for its process's next request.
    pub slice_idle: Ns,
}

impl Default for CfqTunables {
    fn default() -> Self {
        const MS: Ns = 1_000_000;
        CfqTunables {
            quantum: 4,
            fifo_expire_sync: 125 * MS,
            fifo_expire_async: 250 * MS,
            back_seek_max_kb: 16 * 1024,
            back_seek_penalty: 2,
            slice_sync: 100 * MS,
            slice_async: 40 * MS,
            slice_async_rq: 2,
            slice_idle: 8 * MS,
        }
    }
}

/// `/sys/block/<dev>/queue/iosched/` of mq-deadline (defaults as in 6.18).
#[derive(Clone, Debug, Serialize)]
pub struct DeadlineTunables {
    pub read_expire_ms: u64,
    pub write_expire_ms: u64,
    pub fifo_batch: u32,
    pub writes_starved: u32,
    pub front_merges: bool,
    /// 0 = nr_requests (the 6.18 default).
    pub async_depth: u32,
    /// deadline-2002 only: the batch cost of a non-contiguous request (a contiguous one costs 1).
    pub seek_cost: u32,
    /// mq-deadline only (5.14+): ms after which a request of a lower priority class is
    /// served even while higher classes have requests.
    pub prio_aging_expire_ms: u64,
}

impl DeadlineTunables {
    /// The defaults of the 2002 deadline scheduler as Morton tested it on 2.5.38: read_expire
    /// HZ/2, fifo_batch 64 ("4 seeks, or 64 contig"), seek_cost 16, writes_starved 2; no write
    /// expiry and no front_merges tunable (fields kept at the mq-deadline values, unused).
    pub fn deadline_2002() -> Self {
        DeadlineTunables {
            fifo_batch: 64,
            ..Default::default()
        }
    }

    /// The defaults of the 2.6 deadline scheduler (2.6.12's `deadline-iosched.c`): the same
    /// numbers as mq-deadline's, `async_depth` unused.
    pub fn deadline_26() -> Self {
        Self::default()
    }
}

impl Default for DeadlineTunables {
    fn default() -> Self {
        DeadlineTunables {
            read_expire_ms: 500,
            write_expire_ms: 5000,
            fifo_batch: 16,
            writes_starved: 2,
            front_merges: true,
            async_depth: 0,
            seek_cost: 16,
            // prio_aging_expire = 10 * HZ
            prio_aging_expire_ms: 10_000,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `block/mq-deadline.c`: `read_expire = HZ / 2`, `write_expire = 5 * HZ`,
    /// `writes_starved = 2`, `fifo_batch = 16`, front merges on; `async_depth` 0 shows
    /// `nr_requests` (6.18).
    #[test]
    fn mq_deadline_defaults_are_the_kernels() {
        let d = DeadlineTunables::default();
        assert_eq!((d.read_expire_ms, d.write_expire_ms), (500, 5000));
        assert_eq!((d.writes_starved, d.fifo_batch, d.front_merges, d.async_depth), (2, 16, true, 0));
        // 2002's deadline-iosched.c: fifo_batch 64 ("4 seeks, or 64 contig"), seek_cost 16.
        let o = DeadlineTunables::deadline_2002();
        assert_eq!((o.fifo_batch, o.seek_cost, o.read_expire_ms, o.writes_starved), (64, 16, 500, 2));
    }

    /// `block/cfq-iosched.c` of 2.6.20: `cfq_quantum = 4`, `cfq_fifo_expire = {HZ/4, HZ/8}`
    /// (async, sync), `cfq_back_max = 16 * 1024`, `cfq_back_penalty = 2`, `cfq_slice_sync =
    /// HZ/10`, `cfq_slice_async = HZ/25`, `cfq_slice_async_rq = 2`, `cfq_slice_idle = HZ/125`.
    #[test]
    fn cfq_defaults_are_the_kernels() {
        const MS: Ns = 1_000_000;
        let c = CfqTunables::default();
        assert_eq!(c.quantum, 4);
        assert_eq!((c.fifo_expire_async, c.fifo_expire_sync), (250 * MS, 125 * MS));
        assert_eq!((c.back_seek_max_kb, c.back_seek_penalty), (16 * 1024, 2));
        assert_eq!(
            (c.slice_sync, c.slice_async, c.slice_async_rq, c.slice_idle),
            (100 * MS, 40 * MS, 2, 8 * MS)
        );
    }
}
