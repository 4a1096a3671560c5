//! The families the lab has client operations for (a leaf: the configuration and the
//! textbook costs both name them).

/// The families the bench has client operations for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LabFamily {
    /// Mutual exclusion: `acquire` → `acquire_ok`, `release` → `release_ok`.
    Mutex,
    /// Leader election: `start_election` to the initiators, `leader?` → `leader`.
    Election,
}

impl LabFamily {
    /// Every family, in help order.
    pub const ALL: [LabFamily; 2] = [LabFamily::Mutex, LabFamily::Election];

    /// The `--family` name.
    pub fn name(self) -> &'static str {
        match self {
            LabFamily::Mutex => "mutex",
            LabFamily::Election => "election",
        }
    }

    /// The simulator's family of the same name.
    pub fn family(self) -> ringleader_algorithms::Family {
        match self {
            LabFamily::Mutex => ringleader_algorithms::Family::Mutex,
            LabFamily::Election => ringleader_algorithms::Family::Election,
        }
    }
}

impl std::str::FromStr for LabFamily {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        LabFamily::ALL.into_iter().find(|f| f.name() == s).ok_or_else(|| {
            format!("family {s:?}: the lab has client operations for mutex and election (clocks and deadlock are not there yet)")
        })
    }
}
