//! B-WF2Q+ (`block/bfq-wf2q.c`) for the root group's three service trees: each queue is an
//! entity with a virtual start and finish time; among the entities whose start is not
//! after the tree's virtual time, the one that finishes first is served.

use super::bfqq::Tree;
use super::consts::*;
use super::Bfq;
use crate::Ns;

/// One class's service tree (`struct bfq_service_tree`).
#[derive(Default)]
pub(super) struct ServiceTree {
    pub vtime: u64,
    /// Weights of the active, idle-tree and in-service entities.
    pub wsum: u64,
    pub active: Vec<u32>,
    pub idle: Vec<u32>,
}

/// `bfq_delta`: virtual time of `service` sectors at `weight`.
pub(super) fn delta(service: u64, weight: u64) -> u64 {
    (service << WFQ_SERVICE_SHIFT) / weight.max(1)
}

impl Bfq {
    /// `bfq_calc_finish`.
    fn calc_finish(&mut self, q: u32, service: u64) {
        let e = &mut self.qs[q as usize];
        e.finish = e.start + delta(service, e.weight);
    }

    fn active_insert(&mut self, q: u32) {
        self.seq += 1;
        let e = &mut self.qs[q as usize];
        e.tree = Tree::Active;
        e.seq = self.seq;
        self.trees[e.class].active.push(q);
        self.active_list.push(q);
    }

    fn active_extract(&mut self, q: u32) {
        let c = self.qs[q as usize].class;
        let a = &mut self.trees[c].active;
        if let Some(i) = a.iter().position(|&x| x == q) {
            a.remove(i);
        }
        if let Some(i) = self.active_list.iter().position(|&x| x == q) {
            self.active_list.remove(i);
        }
    }

    fn idle_extract(&mut self, q: u32) {
        let c = self.qs[q as usize].class;
        let idle = &mut self.trees[c].idle;
        if let Some(i) = idle.iter().position(|&x| x == q) {
            idle.swap_remove(i);
        }
    }

    /// `bfq_forget_entity`: out of the tree's weight sum.
    fn forget(&mut self, q: u32) {
        let e = &mut self.qs[q as usize];
        self.trees[e.class].wsum -= e.weight;
        e.tree = Tree::None;
    }

    /// `bfq_forget_idle`: idle-tree entities the virtual time has passed are forgotten.
    /// (The kernel looks at the first and last idle entity per call; all are checked here.)
    fn forget_idle(&mut self, class: usize) {
        let vtime = self.trees[class].vtime;
        let mut i = 0;
        while i < self.trees[class].idle.len() {
            let q = self.trees[class].idle[i];
            if self.qs[q as usize].finish <= vtime {
                self.trees[class].idle.swap_remove(i);
                self.forget(q);
            } else {
                i += 1;
            }
        }
    }

    /// `__bfq_entity_update_weight_prio`: apply a pending weight change, moving the queue
    /// between weight counters (weight-raised queues are not counted).
    pub(super) fn update_weight(&mut self, q: u32) {
        let e = &mut self.qs[q as usize];
        e.prio_changed = false;
        let new = e.orig_weight * e.wr_coeff;
        if new == e.weight {
            return;
        }
        if e.tree != Tree::None {
            self.trees[e.class].wsum = self.trees[e.class].wsum - e.weight + new;
        }
        e.weight = new;
        let wr = e.wr_coeff > 1;
        self.weights_remove(q);
        if !wr {
            self.weights_add(q);
        }
    }

    /// `bfq_weights_tree_add`.
    pub(super) fn weights_add(&mut self, q: u32) {
        let e = &mut self.qs[q as usize];
        if e.weight_counter.is_some() {
            return;
        }
        e.weight_counter = Some(e.weight);
        *self.weights.entry(e.weight).or_insert(0) += 1;
    }

    /// `__bfq_weights_tree_remove`.
    pub(super) fn weights_remove(&mut self, q: u32) {
        if let Some(w) = self.qs[q as usize].weight_counter.take() {
            let n = self.weights.get_mut(&w).expect("counted weight");
            *n -= 1;
            if *n == 0 {
                self.weights.remove(&w);
            }
        }
    }

    /// `bfq_update_fin_time_enqueue`: finish = start + budget/weight, with backshifted
    /// timestamps pushed up to (nearly) the virtual time, then into the active tree.
    fn update_fin_time_enqueue(&mut self, q: u32, backshifted: bool) {
        if self.qs[q as usize].prio_changed {
            self.update_weight(q);
        }
        let budget = self.qs[q as usize].budget;
        self.calc_finish(q, budget);
        let e = &mut self.qs[q as usize];
        let vtime = self.trees[e.class].vtime;
        if backshifted && vtime > e.finish {
            let d = (vtime - e.finish) / e.wr_coeff;
            e.start += d;
            e.finish += d;
        }
        self.active_insert(q);
    }

    /// `__bfq_activate_entity`: a queue becomes backlogged. It starts at the virtual time,
    /// or at its old finish if it is still on the idle tree or may recover a service hole
    /// (`non_blocking_wait_rq`: it expired empty and its next request came in time).
    pub(super) fn activate(&mut self, q: u32, non_blocking_wait_rq: bool) {
        let e = &self.qs[q as usize];
        let c = e.class;
        let vtime = self.trees[c].vtime;
        let (backshifted, min_vstart) = if non_blocking_wait_rq && vtime > e.finish {
            (true, e.finish)
        } else {
            (false, vtime)
        };
        if e.tree == Tree::Idle {
            self.idle_extract(q);
            let e = &mut self.qs[q as usize];
            e.start = min_vstart.max(e.finish);
        } else {
            let e = &mut self.qs[q as usize];
            e.start = min_vstart;
            self.trees[c].wsum += e.weight;
            // Counted from now on (a pending weight change adjusts the sum).
            e.tree = Tree::Active;
        }
        self.update_fin_time_enqueue(q, backshifted);
    }

    /// `__bfq_requeue_entity`: the in-service queue goes back with its start moved past the
    /// service it got; an active one is repositioned for a new budget.
    pub(super) fn requeue(&mut self, q: u32) {
        match self.qs[q as usize].tree {
            Tree::InService => {
                let s = self.qs[q as usize].service;
                self.calc_finish(q, s);
                let e = &mut self.qs[q as usize];
                e.start = e.finish;
            }
            Tree::Active => self.active_extract(q),
            Tree::Idle | Tree::None => return self.activate(q, false),
        }
        self.update_fin_time_enqueue(q, false);
    }

    /// `__bfq_deactivate_entity` (into the idle tree): the finish time reflects the service
    /// received; kept on the idle tree while it is ahead of the virtual time.
    pub(super) fn deactivate(&mut self, q: u32) {
        let in_service = self.qs[q as usize].tree == Tree::InService;
        let s = self.qs[q as usize].service;
        self.calc_finish(q, s);
        if !in_service {
            self.qs[q as usize].service = 0;
        }
        match self.qs[q as usize].tree {
            Tree::Active => self.active_extract(q),
            Tree::Idle => self.idle_extract(q),
            _ => {}
        }
        let e = &self.qs[q as usize];
        let c = e.class;
        if e.tree == Tree::None {
            return;
        }
        if e.finish > self.trees[c].vtime {
            self.qs[q as usize].tree = Tree::Idle;
            self.trees[c].idle.push(q);
        } else {
            self.forget(q);
        }
    }

    /// `bfq_bfqq_served`: charge service and advance the tree's virtual time.
    pub(super) fn served(&mut self, q: u32, served: u64) {
        let e = &mut self.qs[q as usize];
        if e.wr_coeff > 1 {
            e.service_from_wr += served;
        }
        e.service_from_backlogged += served;
        e.service += served;
        let class = e.class;
        let st = &mut self.trees[class];
        st.vtime += delta(served, st.wsum);
        self.forget_idle(class);
    }

    /// `__bfq_lookup_next_entity`: jump the virtual time to the smallest start if nothing
    /// is eligible, then the eligible entity with the smallest finish (the newest on ties).
    fn lookup_in_tree(&mut self, class: usize) -> Option<u32> {
        let st = &self.trees[class];
        let min_start = st.active.iter().map(|&q| self.qs[q as usize].start).min()?;
        if min_start > st.vtime {
            self.trees[class].vtime = min_start;
            self.forget_idle(class);
        }
        let vtime = self.trees[class].vtime;
        self.trees[class]
            .active
            .iter()
            .copied()
            .filter(|&q| self.qs[q as usize].start <= vtime)
            .min_by_key(|&q| (self.qs[q as usize].finish, u64::MAX - self.qs[q as usize].seq))
    }

    /// `bfq_lookup_next_entity` + `bfq_get_next_queue`: the next queue to serve, classes
    /// in priority order, the idle class at least every `BFQ_CL_IDLE_TIMEOUT`; it leaves
    /// the active tree.
    pub(super) fn get_next_queue(&mut self, now: Ns) -> Option<u32> {
        let mut first = RT_CLASS;
        if now > self.class_idle_last_service + CL_IDLE_TIMEOUT {
            if !self.trees[IDLE_CLASS].active.is_empty() {
                first = IDLE_CLASS;
            }
            self.class_idle_last_service = now;
        }
        let q = (first..CLASSES).find_map(|c| self.lookup_in_tree(c))?;
        self.active_extract(q);
        self.qs[q as usize].tree = Tree::InService;
        Some(q)
    }
}
