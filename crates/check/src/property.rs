//! The properties the model checker judges, by name: a closed set, each with its kind (`always`
//! or `sometimes`) and its family. The `properties` module says how each is judged.

use ringleader_algorithms::Family;

/// A property the model checker judges.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CheckProperty {
    /// Election: no two live nodes claim leadership for the same term.
    Uniqueness,
    /// Election: once nothing else can happen, every live node knows the same leader.
    Agreement,
    /// Election: once nothing else can happen, the leader is the one the rule demands.
    Validity,
    /// Election: once nothing else can happen, a started election has ended.
    Termination,
    /// Election (`sometimes`): some live node believes it is the coordinator.
    Elected,
    /// Mutex: at most one live node in the critical section.
    Safety,
    /// Mutex: every entry's fencing token is above the previous entry's.
    Fencing,
    /// Mutex: no live node waits forever when nothing else can happen.
    Liveness,
    /// Mutex (`sometimes`): some live node is in the critical section.
    Entered,
}

impl CheckProperty {
    /// Every property, in a fixed order (a property's index is its bit in the model's latch).
    pub const ALL: [CheckProperty; 9] = [
        CheckProperty::Uniqueness,
        CheckProperty::Agreement,
        CheckProperty::Validity,
        CheckProperty::Termination,
        CheckProperty::Elected,
        CheckProperty::Safety,
        CheckProperty::Fencing,
        CheckProperty::Liveness,
        CheckProperty::Entered,
    ];

    /// The properties of `family`, in report order (none for the families the model checker
    /// does not judge).
    pub fn of_family(family: Family) -> &'static [CheckProperty] {
        match family {
            Family::Election => &Self::ALL[0..5],
            Family::Mutex => &Self::ALL[5..9],
            _ => &[],
        }
    }

    /// The name reports use (`uniqueness`, `safety` …).
    pub fn name(self) -> &'static str {
        match self {
            CheckProperty::Uniqueness => "uniqueness",
            CheckProperty::Agreement => "agreement",
            CheckProperty::Validity => "validity",
            CheckProperty::Termination => "termination",
            CheckProperty::Elected => "elected",
            CheckProperty::Safety => "safety",
            CheckProperty::Fencing => "fencing",
            CheckProperty::Liveness => "liveness",
            CheckProperty::Entered => "entered",
        }
    }

    /// The property called `name`.
    pub fn from_name(name: &str) -> Option<CheckProperty> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }

    /// True for an `always` property (a counterexample violates it), false for a `sometimes`
    /// one (an example proves it reachable).
    pub fn always(self) -> bool {
        !matches!(self, CheckProperty::Elected | CheckProperty::Entered)
    }

    /// The property's bit in a set of properties.
    pub fn bit(self) -> u64 {
        1 << self as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back_and_families_list_their_own() {
        for p in CheckProperty::ALL {
            assert_eq!(CheckProperty::from_name(p.name()), Some(p));
        }
        assert_eq!(CheckProperty::from_name("fifo"), None);
        let names = |f| CheckProperty::of_family(f).iter().map(|p| p.name()).collect::<Vec<_>>();
        assert_eq!(
            names(Family::Election),
            ["uniqueness", "agreement", "validity", "termination", "elected"]
        );
        assert_eq!(names(Family::Mutex), ["safety", "fencing", "liveness", "entered"]);
        assert!(names(Family::Clock).is_empty());
        assert_eq!(CheckProperty::Entered.bit(), 1 << 8);
    }
}
