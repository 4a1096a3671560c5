//! The properties the checkers judge, by name.

use std::fmt;
use std::str::FromStr;

/// A property a checker may report violated (what `expect.violations` may name).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Property {
    /// `agreement`: every live process names the same coordinator (end of run).
    Agreement,
    /// `validity`: that coordinator is alive and the one the algorithm's rule demands.
    Validity,
    /// `uniqueness`: never two live processes that believe they coordinate the same term.
    Uniqueness,
    /// `termination`: every live process learned a coordinator (end of run).
    Termination,
    /// `safety`: never two live processes in the critical section.
    Safety,
    /// `liveness`: while requests wait, somebody entered after the oldest one was made.
    Liveness,
    /// `no_starvation`: every request of a live process was served (mutual exclusion), no live process still waits (deadlock prevention).
    NoStarvation,
    /// `fifo`: a coordinator or arbiter grants in the order it queued requests.
    Fifo,
    /// `fencing`: every entry carries a larger fencing token than the previous entry's.
    Fencing,
    /// `timestamp_order`: no live process enters while another has an older (timestamp, uid) request.
    TimestampOrder,
    /// `clock_condition`: e → f ⇒ L(e) < L(f) (Lamport clocks).
    ClockCondition,
    /// `strong_clock_condition`: e → f ⇔ V(e) < V(f) (vector clocks).
    StrongClockCondition,
    /// `monotonic`: no physical clock is set back.
    Monotonic,
    /// `make_rebuilds`: `make` rebuilds a source edited after its last compile.
    MakeRebuilds,
    /// `coverage`: every live node is served by a live super-peer.
    Coverage,
    /// `fraction`: the live super-peers number between half the target and the target.
    Fraction,
    /// `balanced_load`: no super-peer serves more than 4× the mean number of normal nodes.
    BalancedLoad,
    /// `soundness`: every reported cycle is in the wait-for graph.
    Soundness,
    /// `completeness`: every real deadlock is reported in time (deadlock detection); every crashed process is suspected (failure detectors).
    Completeness,
    /// `single_victim`: every abort comes from a process on a cycle at that moment.
    SingleVictim,
    /// `no_deadlock`: the wait-for graph never has a cycle (deadlock prevention).
    NoDeadlock,
    /// `eventual_accuracy`: no live process is suspected by a live process at the end.
    EventualAccuracy,
    /// `linearizable`: the clients' lock, release and lease-end operations are linearizable
    /// (the lock service).
    Linearizable,
}

impl Property {
    /// Every property, in the order the documentation lists them.
    pub const ALL: [Property; 23] = [
        Property::Agreement,
        Property::Validity,
        Property::Uniqueness,
        Property::Termination,
        Property::Safety,
        Property::Liveness,
        Property::NoStarvation,
        Property::Fifo,
        Property::Fencing,
        Property::TimestampOrder,
        Property::ClockCondition,
        Property::StrongClockCondition,
        Property::Monotonic,
        Property::MakeRebuilds,
        Property::Coverage,
        Property::Fraction,
        Property::BalancedLoad,
        Property::Soundness,
        Property::Completeness,
        Property::SingleVictim,
        Property::NoDeadlock,
        Property::EventualAccuracy,
        Property::Linearizable,
    ];

    /// The property's name, as reports, traces and scenarios spell it.
    pub const fn name(self) -> &'static str {
        match self {
            Property::Agreement => "agreement",
            Property::Validity => "validity",
            Property::Uniqueness => "uniqueness",
            Property::Termination => "termination",
            Property::Safety => "safety",
            Property::Liveness => "liveness",
            Property::NoStarvation => "no_starvation",
            Property::Fifo => "fifo",
            Property::Fencing => "fencing",
            Property::TimestampOrder => "timestamp_order",
            Property::ClockCondition => "clock_condition",
            Property::StrongClockCondition => "strong_clock_condition",
            Property::Monotonic => "monotonic",
            Property::MakeRebuilds => "make_rebuilds",
            Property::Coverage => "coverage",
            Property::Fraction => "fraction",
            Property::BalancedLoad => "balanced_load",
            Property::Soundness => "soundness",
            Property::Completeness => "completeness",
            Property::SingleVictim => "single_victim",
            Property::NoDeadlock => "no_deadlock",
            Property::EventualAccuracy => "eventual_accuracy",
            Property::Linearizable => "linearizable",
        }
    }

    /// The property named `name`, if there is one.
    pub fn from_name(name: &str) -> Option<Property> {
        Property::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// Serialised as its name (`"no_starvation"`), as reports and traces spell it.
impl serde::Serialize for Property {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl fmt::Display for Property {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is no property's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a property")]
pub struct UnknownProperty(pub String);

impl FromStr for Property {
    type Err = UnknownProperty;
    fn from_str(s: &str) -> Result<Property, UnknownProperty> {
        Property::from_name(s).ok_or_else(|| UnknownProperty(s.to_string()))
    }
}

/// Every property's name, in [`Property::ALL`] order.
pub const NAMES: [&str; 23] = {
    let mut names = [""; 23];
    let mut i = 0;
    while i < names.len() {
        names[i] = Property::ALL[i].name();
        i += 1;
    }
    names
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back() {
        for p in Property::ALL {
            assert_eq!(p.name().parse::<Property>(), Ok(p));
        }
        assert_eq!("safety".parse::<Property>(), Ok(Property::Safety));
        assert!("safe".parse::<Property>().is_err());
        assert_eq!(NAMES.len(), Property::ALL.len());
    }
}
