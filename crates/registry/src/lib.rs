//! # ringleader-registry
//!
//! Every algorithm by the name `--algo` takes, and a way to run generic code on one of them.
//!
//! Drivers are generic over [`Algorithm`]; the command line knows only a name. [`dispatch`]
//! bridges the two: it calls [`Visitor::visit`] with the concrete type. Adding an algorithm
//! means adding one line to the `registry!` list below.
//!
//! The registry sits above the textbook algorithms (`ringleader-algorithms`) and the lock
//! service's replicated core (`ringleader-lock-service`), so that the first links no Raft
//! library: only the drivers that run the lock service by name depend on both, through here.

#![warn(missing_docs)]

use ringleader_algorithms::{
    Algorithm, Info, PlainVisitor, Visitor, clocks, deadlock, detectors, election, mutex,
};
use ringleader_lock_service::process::LockService;

macro_rules! registry {
    (plain: [$($plain:ty),* $(,)?], engine: [$($engine:ty),* $(,)?] $(,)?) => {
        /// Every algorithm, in the order `ringleader list` prints them.
        pub fn all() -> Vec<Info> {
            vec![$(Info::of::<$plain>(),)* $(Info::of::<$engine>(),)*]
        }

        /// Calls `visitor` with the algorithm named `name`; `None` when no algorithm has that name.
        pub fn dispatch<V: Visitor>(name: &str, visitor: V) -> Option<V::Output> {
            $(
                if name == <$plain as Algorithm>::NAME {
                    return Some(visitor.visit::<$plain>());
                }
            )*
            $(
                if name == <$engine as Algorithm>::NAME {
                    return Some(visitor.visit::<$engine>());
                }
            )*
            None
        }

        /// Calls `visitor` with the algorithm named `name` if its state is plain data; `None`
        /// when no such algorithm has that name (see [`is_plain`] to tell the two cases apart).
        pub fn dispatch_plain<V: PlainVisitor>(name: &str, visitor: V) -> Option<V::Output> {
            $(
                if name == <$plain as Algorithm>::NAME {
                    return Some(visitor.visit::<$plain>());
                }
            )*
            None
        }

        /// True when `name` is an algorithm whose state is plain data: the model checker can
        /// explore it and a real node can keep it in a whole-state file.
        pub fn is_plain(name: &str) -> bool {
            [$(<$plain as Algorithm>::NAME),*].contains(&name)
        }
    };
}

registry! {
    plain: [
    election::chang_roberts::ChangRoberts,
    election::bully::Bully,
    election::ring::Ring,
    election::ring::RingMin,
    election::majority::Majority,
    election::hirschberg_sinclair::HirschbergSinclair,
    election::yoyo::YoYo,
    election::superpeer_dht::SuperPeerDht,
    election::superpeer_geometric::SuperPeerGeometric,
    mutex::central::Central,
    mutex::central::CentralTimeout,
    mutex::token_ring::TokenRing,
    mutex::quorum::Quorum,
    mutex::lamport::Lamport,
    mutex::ricart_agrawala::RicartAgrawala,
    mutex::roucairol_carvalho::RoucairolCarvalho,
    mutex::maekawa::Maekawa,
    mutex::suzuki_kasami::SuzukiKasami,
    mutex::raymond::Raymond,
    clocks::lamport_clock::LamportClock,
    clocks::vector_clock::VectorClock,
    clocks::cristian::Cristian,
    clocks::berkeley::Berkeley,
    clocks::ntp::Ntp,
    clocks::make::Make,
    deadlock::chandy_misra_haas::ChandyMisraHaas,
    deadlock::wait_die::WaitDie,
    deadlock::wound_wait::WoundWait,
    detectors::heartbeat::Heartbeat,
    detectors::phi_accrual::PhiAccrual,
    ],
    engine: [
    LockService,
    ],
}

/// The description of the algorithm named `name`.
pub fn find(name: &str) -> Option<Info> {
    all().into_iter().find(|i| i.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_kebab_case() {
        let infos = all();
        for (i, a) in infos.iter().enumerate() {
            assert!(a.name.chars().all(|c| c.is_ascii_lowercase() || c == '-'), "{}", a.name);
            assert!(infos[i + 1..].iter().all(|b| b.name != a.name), "{} twice", a.name);
            assert_eq!(find(a.name), Some(*a));
        }
        assert_eq!(find("no-such"), None);
    }
}
