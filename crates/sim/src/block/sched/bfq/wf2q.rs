//! Hierarchical B-WF2Q+ (`block/bfq-wf2q.c`). Every queue and every group below the root is
//! an entity with a virtual start and finish time in its parent group's service tree of its
//! class; among the entities whose start is not after the tree's virtual time, the one that
//! finishes first is served. Serving descends from the root: a group chosen at one level
//! chooses among its own children, down to a queue. Service is charged to the queue and to
//! each group above it, so that groups share the device by their weights whatever the
//! number of queues inside them.

use super::bfqq::Tree;
use super::consts::*;
use super::Bfq;
use crate::Ns;

/// `struct bfq_entity`: the scheduling state shared by queues and groups; service in sectors.
#[derive(Clone, Debug, Default)]
pub(super) struct Entity {
    pub start: u64,
    pub finish: u64,
    pub budget: u64,
    pub service: u64,
    pub weight: u64,
    pub tree: Tree,
    /// Insertion order in the active tree: on equal finish times the newer entity is first.
    pub seq: u64,
    /// The group whose service trees hold this entity (0: the root group).
    pub parent: u32,
}

/// One class's service tree (`struct bfq_service_tree`).
#[derive(Default)]
pub(super) struct ServiceTree {
    pub vtime: u64,
    /// Weights of the active, idle-tree and in-service entities.
    pub wsum: u64,
    pub active: Vec<u32>,
    pub idle: Vec<u32>,
}

/// `struct bfq_group`: a cgroup's share of one device, and the service trees of its children.
pub(super) struct BfqGroup {
    /// Its entity in the parent's trees (unused for the root group, which has none).
    pub en: Entity,
    /// `struct bfq_sched_data`: a service tree per class.
    pub sd: [ServiceTree; CLASSES],
    pub class_idle_last_service: Ns,
    /// Its queues with requests queued or in flight (`num_queues_with_pending_reqs`).
    pub pending_queues: u32,
}

impl BfqGroup {
    pub(super) fn new(parent: u32, weight: u64) -> Self {
        BfqGroup {
            en: Entity {
                weight,
                parent,
                ..Entity::default()
            },
            sd: Default::default(),
            class_idle_last_service: 0,
            pending_queues: 0,
        }
    }

    fn has_active(&self) -> bool {
        self.sd.iter().any(|st| !st.active.is_empty())
    }
}

/// Entity ids: a queue's index, or a group's index with this bit set.
pub(super) const GROUP: u32 = 1 << 31;

/// `bfq_delta`: virtual time of `service` sectors at `weight`.
pub(super) fn delta(service: u64, weight: u64) -> u64 {
    (service << WFQ_SERVICE_SHIFT) / weight.max(1)
}

impl Bfq {
    pub(super) fn en(&self, e: u32) -> &Entity {
        if e & GROUP != 0 {
            &self.groups[(e & !GROUP) as usize].en
        } else {
            &self.qs[e as usize].en
        }
    }

    fn en_mut(&mut self, e: u32) -> &mut Entity {
        if e & GROUP != 0 {
            &mut self.groups[(e & !GROUP) as usize].en
        } else {
            &mut self.qs[e as usize].en
        }
    }

    /// `bfq_class_idx`: a group's entity is best effort (`BFQ_DEFAULT_GRP_CLASS`).
    fn class_of(&self, e: u32) -> usize {
        if e & GROUP != 0 {
            BE_CLASS
        } else {
            self.qs[e as usize].class
        }
    }

    /// `bfq_entity_service_tree`: the parent's tree of the entity's class.
    fn st(&mut self, e: u32) -> &mut ServiceTree {
        let (p, c) = (self.en(e).parent, self.class_of(e));
        &mut self.groups[p as usize].sd[c]
    }

    /// `bfq_calc_finish`.
    fn calc_finish(&mut self, e: u32, service: u64) {
        let en = self.en_mut(e);
        en.finish = en.start + delta(service, en.weight);
    }

    fn active_insert(&mut self, e: u32) {
        self.seq += 1;
        let seq = self.seq;
        let en = self.en_mut(e);
        en.tree = Tree::Active;
        en.seq = seq;
        self.st(e).active.push(e);
        if e & GROUP == 0 {
            self.active_list.push(e);
        }
    }

    fn active_extract(&mut self, e: u32) {
        let a = &mut self.st(e).active;
        if let Some(i) = a.iter().position(|&x| x == e) {
            a.remove(i);
        }
        if e & GROUP == 0 {
            if let Some(i) = self.active_list.iter().position(|&x| x == e) {
                self.active_list.remove(i);
            }
        }
    }

    fn idle_extract(&mut self, e: u32) {
        let idle = &mut self.st(e).idle;
        if let Some(i) = idle.iter().position(|&x| x == e) {
            idle.swap_remove(i);
        }
    }

    /// `bfq_forget_entity`: out of the tree's weight sum.
    fn forget(&mut self, e: u32) {
        let w = self.en(e).weight;
        self.st(e).wsum -= w;
        self.en_mut(e).tree = Tree::None;
    }

    /// `bfq_forget_idle`: idle-tree entities the virtual time has passed are forgotten.
    /// (The kernel looks at the first and last idle entity per call; all are checked here.)
    fn forget_idle(&mut self, g: u32, class: usize) {
        let st = &self.groups[g as usize].sd[class];
        let vtime = st.vtime;
        let mut i = 0;
        while i < self.groups[g as usize].sd[class].idle.len() {
            let e = self.groups[g as usize].sd[class].idle[i];
            if self.en(e).finish <= vtime {
                self.groups[g as usize].sd[class].idle.swap_remove(i);
                self.forget(e);
            } else {
                i += 1;
            }
        }
    }

    /// `__bfq_entity_update_weight_prio`: apply a pending weight change, moving the queue
    /// between weight counters (weight-raised queues are not counted).
    pub(super) fn update_weight(&mut self, q: u32) {
        let b = &mut self.qs[q as usize];
        b.prio_changed = false;
        let new = b.orig_weight * b.wr_coeff;
        let old = b.en.weight;
        if new == old {
            return;
        }
        let on_tree = b.en.tree != Tree::None;
        b.en.weight = new;
        if on_tree {
            let st = self.st(q);
            st.wsum = st.wsum - old + new;
        }
        let wr = self.qs[q as usize].wr_coeff > 1;
        self.weights_remove(q);
        if !wr {
            self.weights_add(q);
        }
    }

    /// `bfq_weights_tree_add`.
    pub(super) fn weights_add(&mut self, q: u32) {
        let b = &mut self.qs[q as usize];
        if b.weight_counter.is_some() {
            return;
        }
        b.weight_counter = Some(b.en.weight);
        *self.weights.entry(b.en.weight).or_insert(0) += 1;
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
    fn update_fin_time_enqueue(&mut self, e: u32, backshifted: bool) {
        let coeff = if e & GROUP == 0 {
            if self.qs[e as usize].prio_changed {
                self.update_weight(e);
            }
            self.qs[e as usize].wr_coeff
        } else {
            1
        };
        let budget = self.en(e).budget;
        self.calc_finish(e, budget);
        let vtime = self.st(e).vtime;
        let en = self.en_mut(e);
        if backshifted && vtime > en.finish {
            let d = (vtime - en.finish) / coeff;
            en.start += d;
            en.finish += d;
        }
        self.active_insert(e);
    }

    /// `__bfq_activate_entity`: an entity becomes backlogged. It starts at the virtual time,
    /// or at its old finish if it is still on the idle tree or may recover a service hole
    /// (`non_blocking_wait_rq`: it expired empty and its next request came in time).
    fn activate_entity(&mut self, e: u32, non_blocking_wait_rq: bool) {
        let vtime = self.st(e).vtime;
        let finish = self.en(e).finish;
        let (backshifted, min_vstart) = if non_blocking_wait_rq && vtime > finish {
            (true, finish)
        } else {
            (false, vtime)
        };
        if self.en(e).tree == Tree::Idle {
            self.idle_extract(e);
            let en = self.en_mut(e);
            en.start = min_vstart.max(en.finish);
        } else {
            let w = self.en(e).weight;
            self.st(e).wsum += w;
            let en = self.en_mut(e);
            en.start = min_vstart;
            // Counted from now on (a pending weight change adjusts the sum).
            en.tree = Tree::Active;
        }
        self.update_fin_time_enqueue(e, backshifted);
    }

    /// `bfq_activate_bfqq`: a queue becomes backlogged, and so does each group above it
    /// that was not (with the queue's budget, its next to serve, as its own).
    pub(super) fn activate(&mut self, q: u32, non_blocking_wait_rq: bool) {
        self.activate_entity(q, non_blocking_wait_rq);
        let mut child = q;
        let mut g = self.qs[q as usize].en.parent;
        while g != 0 {
            let ge = GROUP | g;
            if matches!(self.en(ge).tree, Tree::Active | Tree::InService) {
                break;
            }
            let budget = self.en(child).budget;
            self.en_mut(ge).budget = budget;
            self.activate_entity(ge, non_blocking_wait_rq);
            child = ge;
            g = self.en(ge).parent;
        }
    }

    /// `__bfq_requeue_entity`: the in-service entity goes back with its start moved past the
    /// service it got; an active one is repositioned for a new budget.
    fn requeue_entity(&mut self, e: u32) {
        match self.en(e).tree {
            Tree::InService => {
                let s = self.en(e).service;
                self.calc_finish(e, s);
                let en = self.en_mut(e);
                en.start = en.finish;
            }
            Tree::Active => self.active_extract(e),
            Tree::Idle | Tree::None => return self.activate_entity(e, false),
        }
        self.update_fin_time_enqueue(e, false);
    }

    /// `bfq_requeue_bfqq`: the queue is requeued; when it was in service (an expiration),
    /// so is every group above it, each with the budget of its next entity to serve.
    pub(super) fn requeue(&mut self, q: u32) {
        let expiring = self.qs[q as usize].en.tree == Tree::InService;
        if matches!(self.qs[q as usize].en.tree, Tree::Idle | Tree::None) {
            return self.activate(q, false);
        }
        self.requeue_entity(q);
        if expiring {
            self.requeue_groups_from(self.qs[q as usize].en.parent);
        }
    }

    /// Requeue group `g` and the groups above it, all leaving service.
    fn requeue_groups_from(&mut self, mut g: u32) {
        while g != 0 {
            let budget = self.peek_next(g).map_or(0, |e| self.en(e).budget);
            let ge = GROUP | g;
            self.en_mut(ge).budget = budget;
            self.requeue_entity(ge);
            g = self.en(ge).parent;
        }
    }

    /// `__bfq_deactivate_entity` (into the idle tree): the finish time reflects the service
    /// received; kept on the idle tree while it is ahead of the virtual time.
    fn deactivate_entity(&mut self, e: u32) {
        let in_service = self.en(e).tree == Tree::InService;
        let s = self.en(e).service;
        self.calc_finish(e, s);
        if !in_service {
            self.en_mut(e).service = 0;
        }
        match self.en(e).tree {
            Tree::Active => self.active_extract(e),
            Tree::Idle => self.idle_extract(e),
            Tree::None => return,
            Tree::InService => {}
        }
        if self.en(e).finish > self.st(e).vtime {
            self.en_mut(e).tree = Tree::Idle;
            self.st(e).idle.push(e);
        } else {
            self.forget(e);
        }
    }

    /// `bfq_deactivate_bfqq` (`bfq_deactivate_entity`): the queue leaves the active tree;
    /// a group left with nothing to serve follows it into its parent's idle tree. On an
    /// expiration the first group that still has work is requeued, with those above it.
    pub(super) fn deactivate(&mut self, q: u32) {
        let expiring = self.qs[q as usize].en.tree == Tree::InService;
        self.deactivate_entity(q);
        let mut g = self.qs[q as usize].en.parent;
        while g != 0 {
            let ge = GROUP | g;
            let in_service = self.en(ge).tree == Tree::InService;
            if !self.groups[g as usize].has_active() && (expiring || !in_service) {
                self.deactivate_entity(ge);
                g = self.en(ge).parent;
                continue;
            }
            if expiring {
                self.requeue_groups_from(g);
            }
            break;
        }
    }

    /// `bfq_bfqq_served`: charge service to the queue and the groups above it, advancing
    /// each tree's virtual time.
    pub(super) fn served(&mut self, q: u32, served: u64) {
        let b = &mut self.qs[q as usize];
        if b.wr_coeff > 1 {
            b.service_from_wr += served;
        }
        b.service_from_backlogged += served;
        let mut e = q;
        loop {
            self.en_mut(e).service += served;
            let (g, class) = (self.en(e).parent, self.class_of(e));
            let st = &mut self.groups[g as usize].sd[class];
            st.vtime += delta(served, st.wsum);
            self.forget_idle(g, class);
            if g == 0 {
                break;
            }
            e = GROUP | g;
        }
    }

    /// `__bfq_lookup_next_entity`: jump the virtual time to the smallest start if nothing
    /// is eligible, then the eligible entity with the smallest finish (the newest on ties).
    fn lookup_in_tree(&mut self, g: u32, class: usize) -> Option<u32> {
        let st = &self.groups[g as usize].sd[class];
        let min_start = st.active.iter().map(|&e| self.en(e).start).min()?;
        if min_start > st.vtime {
            self.groups[g as usize].sd[class].vtime = min_start;
            self.forget_idle(g, class);
        }
        let st = &self.groups[g as usize].sd[class];
        let vtime = st.vtime;
        st.active
            .iter()
            .copied()
            .filter(|&e| self.en(e).start <= vtime)
            .min_by_key(|&e| (self.en(e).finish, u64::MAX - self.en(e).seq))
    }

    /// The entity group `g` would serve next (`sd->next_in_service`), classes in order.
    fn peek_next(&mut self, g: u32) -> Option<u32> {
        (RT_CLASS..CLASSES).find_map(|c| self.lookup_in_tree(g, c))
    }

    /// `bfq_lookup_next_entity` + `bfq_get_next_queue`: from the root down, each level's next
    /// entity is set in service (classes in priority order, the idle class at least every
    /// `BFQ_CL_IDLE_TIMEOUT`) until a queue is reached; they leave their active trees.
    pub(super) fn get_next_queue(&mut self, now: Ns) -> Option<u32> {
        let mut g = 0u32;
        loop {
            let mut first = RT_CLASS;
            let grp = &mut self.groups[g as usize];
            if now > grp.class_idle_last_service + CL_IDLE_TIMEOUT {
                if !grp.sd[IDLE_CLASS].active.is_empty() {
                    first = IDLE_CLASS;
                }
                grp.class_idle_last_service = now;
            }
            let e = (first..CLASSES).find_map(|c| self.lookup_in_tree(g, c))?;
            self.active_extract(e);
            self.en_mut(e).tree = Tree::InService;
            if e & GROUP == 0 {
                return Some(e);
            }
            self.en_mut(e).service = 0;
            g = e & !GROUP;
        }
    }
}
