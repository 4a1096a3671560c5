//! The network model: latency sampling, loss, duplication, FIFO links and partitions.

use std::collections::HashMap;

use rand::{Rng, RngExt};
use rand_distr::{Distribution, Exp, LogNormal, Normal};
use ringleader_core::{NodeId, Time};

use crate::notation::Latency;

/// A latency distribution ready to sample.
#[derive(Clone, Debug)]
pub enum Sampler {
    /// Always the same delay (draws no randomness).
    Constant(Time),
    /// Uniform on `[a, b]`.
    Uniform(Time, Time),
    /// Exponential.
    Exponential(Exp<f64>),
    /// Normal, clamped at zero.
    Normal(Normal<f64>),
    /// Log-normal.
    LogNormal(LogNormal<f64>),
}

impl Sampler {
    /// Prepares `latency` for sampling.
    pub fn new(latency: &Latency) -> Sampler {
        match *latency {
            Latency::Constant(d) => Sampler::Constant(d),
            Latency::Uniform(a, b) => Sampler::Uniform(a, b),
            Latency::Exponential(m) => {
                Sampler::Exponential(Exp::new(1.0 / (m.max(1) as f64)).expect("positive rate"))
            }
            Latency::Normal(m, sd) => Sampler::Normal(Normal::new(m as f64, sd as f64).expect("finite sd")),
            Latency::LogNormal(med, sigma) => {
                Sampler::LogNormal(LogNormal::new((med.max(1) as f64).ln(), sigma).expect("finite sigma"))
            }
        }
    }

    /// One delay.
    #[inline]
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> Time {
        match self {
            Sampler::Constant(d) => *d,
            Sampler::Uniform(a, b) => rng.random_range(*a..=*b),
            Sampler::Exponential(d) => d.sample(rng).round() as Time,
            Sampler::Normal(d) => d.sample(rng).max(0.0).round() as Time,
            Sampler::LogNormal(d) => d.sample(rng).round() as Time,
        }
    }
}

/// A cut between two sides, active between two times.
#[derive(Clone, Debug)]
pub struct Cut {
    /// Positions on one side (sorted).
    pub left: Vec<NodeId>,
    /// Positions on the other (sorted).
    pub right: Vec<NodeId>,
    /// Only `left → right` is cut.
    pub one_way: bool,
    /// Whether the cut is in force now.
    pub active: bool,
}

impl Cut {
    fn blocks(&self, from: NodeId, to: NodeId) -> bool {
        let l = |x: NodeId| self.left.binary_search(&x).is_ok();
        let r = |x: NodeId| self.right.binary_search(&x).is_ok();
        (l(from) && r(to)) || (!self.one_way && r(from) && l(to))
    }
}

/// The network's state during a run.
#[derive(Debug)]
pub struct Network {
    /// Latency sampler.
    pub latency: Sampler,
    /// Loss probability.
    pub loss: f64,
    /// Duplication probability.
    pub dup: f64,
    /// FIFO per link: last scheduled delivery time per (from, to).
    fifo: Option<HashMap<(NodeId, NodeId), Time>>,
    /// Every partition of the plan, active or not.
    pub cuts: Vec<Cut>,
}

impl Network {
    /// A network with the given model.
    pub fn new(latency: &Latency, loss: f64, dup: f64, fifo: bool, cuts: Vec<Cut>) -> Network {
        Network { latency: Sampler::new(latency), loss, dup, fifo: fifo.then(HashMap::new), cuts }
    }

    /// True when an active partition stops `from → to`.
    #[inline]
    pub fn is_cut(&self, from: NodeId, to: NodeId) -> bool {
        !self.cuts.is_empty() && self.cuts.iter().any(|c| c.active && c.blocks(from, to))
    }

    /// Decides what happens to one send at `now`: `None` if it is lost, else its delivery time
    /// (respecting FIFO order on the link when asked).
    #[inline]
    pub fn schedule<R: Rng + ?Sized>(
        &mut self,
        rng: &mut R,
        now: Time,
        from: NodeId,
        to: NodeId,
    ) -> Option<Time> {
        if self.loss > 0.0 && rng.random_bool(self.loss) {
            return None;
        }
        let at = now + self.latency.sample(rng);
        Some(self.in_order(from, to, at))
    }

    /// True when a send draws randomness: a random latency, loss or duplication.
    #[inline]
    pub fn draws(&self) -> bool {
        !matches!(self.latency, Sampler::Constant(_)) || self.loss > 0.0 || self.dup > 0.0
    }

    /// [`Network::schedule`] for a send that may have no stream: `rng` is `None` only when
    /// [`Network::draws`] is false (constant latency, nothing lost).
    #[inline]
    pub fn schedule_with<R: Rng + ?Sized>(
        &mut self,
        rng: Option<&mut R>,
        now: Time,
        from: NodeId,
        to: NodeId,
    ) -> Option<Time> {
        match (rng, &self.latency) {
            (Some(rng), _) => self.schedule(rng, now, from, to),
            (None, Sampler::Constant(d)) => {
                let at = now + d;
                Some(self.in_order(from, to, at))
            }
            (None, _) => unreachable!("a random latency draws randomness"),
        }
    }

    /// `at`, or later to keep the link's messages in order when it is FIFO.
    #[inline]
    fn in_order(&mut self, from: NodeId, to: NodeId, at: Time) -> Time {
        match self.fifo.as_mut() {
            Some(last) => {
                let slot = last.entry((from, to)).or_insert(0);
                *slot = at.max(*slot);
                *slot
            }
            None => at,
        }
    }

    /// True when this send should be delivered a second time.
    #[inline]
    pub fn duplicate<R: Rng + ?Sized>(&self, rng: &mut R) -> bool {
        self.dup > 0.0 && rng.random_bool(self.dup)
    }
}
