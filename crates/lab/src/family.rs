//! The families the lab has client operations for (a leaf: the configuration and the
//! textbook costs both name them).

/// The families the bench has client operations for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LabFamily {
    /// Mutual exclusion: `acquire` → `acquire_ok`, `release` → `release_ok`.
    Mutex,
    /// Leader election: `start_election` to the initiators, `leader?` → `leader`.
    Election,
    /// Logical clocks: `local` → `local_ok`, `send_to` → `send_to_ok`, `read` → `value`, each
    /// answer carrying the node's clock `value` (a number, or a list for a vector clock).
    Clock,
    /// Deadlock detection: `want` (the node's transaction now waits for the named holders),
    /// `grant` (one holder granted), `abort` (the client gave up waiting); the node reports a
    /// detected cycle with `deadlock` and, as a victim, `aborted` (both to `lab`).
    Deadlock,
}

impl LabFamily {
    /// Every family, in help order.
    pub const ALL: [LabFamily; 4] =
        [LabFamily::Mutex, LabFamily::Election, LabFamily::Clock, LabFamily::Deadlock];

    /// The `--family` name.
    pub fn name(self) -> &'static str {
        match self {
            LabFamily::Mutex => "mutex",
            LabFamily::Election => "election",
            LabFamily::Clock => "clock",
            LabFamily::Deadlock => "deadlock",
        }
    }

    /// The lab family of the simulator's `family`, if the lab has one.
    pub fn of(family: ringleader_algorithms::Family) -> Option<LabFamily> {
        LabFamily::ALL.into_iter().find(|f| f.family() == family)
    }

    /// The simulator's family of the same name.
    pub fn family(self) -> ringleader_algorithms::Family {
        match self {
            LabFamily::Mutex => ringleader_algorithms::Family::Mutex,
            LabFamily::Election => ringleader_algorithms::Family::Election,
            LabFamily::Clock => ringleader_algorithms::Family::Clock,
            LabFamily::Deadlock => ringleader_algorithms::Family::Deadlock,
        }
    }
}

impl std::str::FromStr for LabFamily {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        LabFamily::ALL.into_iter().find(|f| f.name() == s).ok_or_else(|| {
            format!("family {s:?}: the lab has client operations for mutex, election, clock and deadlock")
        })
    }
}
