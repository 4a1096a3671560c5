//! Shared helpers for the rule tests: one node of an algorithm, built as a driver builds it,
//! in the single-node harness of `ringleader_core::harness`.

use std::collections::BTreeMap;

use ringleader_core::harness::Harness;
use ringleader_core::{NodeId, Time, Topology, Uid};

use crate::{Algorithm, Params, Setup};

/// The system a node under test lives in: uids (ascending `1..=n` unless set), topology (the
/// complete graph unless set), parameters and the one-way delay bound.
pub(crate) struct TestSystem {
    pub uids: Vec<Uid>,
    pub topology: Topology,
    pub params: BTreeMap<String, String>,
    pub max_delay: Time,
}

impl TestSystem {
    /// `n` nodes with uids `1..=n` on a complete graph, no parameters, a 1 ms delay bound.
    pub fn new(n: u32) -> TestSystem {
        TestSystem {
            uids: (1..=n as Uid).collect(),
            topology: Topology::Complete { n },
            params: BTreeMap::new(),
            max_delay: 1_000_000,
        }
    }

    /// Uses these uids (one per position).
    pub fn uids(mut self, uids: &[Uid]) -> TestSystem {
        self.uids = uids.to_vec();
        self
    }

    /// Uses this topology.
    pub fn topology(mut self, topology: Topology) -> TestSystem {
        self.topology = topology;
        self
    }

    /// Sets parameter `key` to `value`.
    pub fn param(mut self, key: &str, value: &str) -> TestSystem {
        self.params.insert(key.into(), value.into());
        self
    }

    /// Runs `f` with the setup a driver would give the algorithms (seed 1).
    fn with_setup<R>(&self, f: impl FnOnce(&Setup) -> R) -> R {
        let params = Params::new(self.params.clone());
        let setup = Setup {
            uids: &self.uids,
            topology: &self.topology,
            params: &params,
            max_delay: self.max_delay,
            seed: 1,
        };
        f(&setup)
    }

    /// The validated configuration of algorithm `A` in this world.
    pub fn config<A: Algorithm>(&self) -> A::Config {
        self.with_setup(|setup| A::configure(setup).expect("valid parameters"))
    }

    /// The node at position `me`, configured and constructed as a driver would.
    pub fn node<A: Algorithm>(&self, me: NodeId) -> Harness<A> {
        let config = self.config::<A>();
        let process = self.with_setup(|setup| A::new(me, &config, setup));
        Harness::new(process, me, self.uids.clone(), self.topology.clone())
    }
}
