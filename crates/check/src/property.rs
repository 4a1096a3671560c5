//! The properties the model checker judges, by name: a closed set, each with its kind (`always`
//! or `sometimes`) and its family. The `properties` module says how each is judged.
//!
//! A [`ModelProperty`] is judged on every state the checker reaches, not on one run's trace as a
//! `ringleader_judge::checkers::Property` is: the set differs (the `sometimes` properties
//! `elected` and `entered` prove a state reachable and have no run counterpart, and most of the
//! run properties are not model-checked), and so does the judgement (liveness here means that
//! no live node waits in a state where nothing else can happen).

use ringleader_algorithms::Family;

/// A property the model checker judges.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ModelProperty {
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

impl ModelProperty {
    /// Every property, in a fixed order (a property's index is its bit in the model's latch).
    pub const ALL: [ModelProperty; 9] = [
        ModelProperty::Uniqueness,
        ModelProperty::Agreement,
        ModelProperty::Validity,
        ModelProperty::Termination,
        ModelProperty::Elected,
        ModelProperty::Safety,
        ModelProperty::Fencing,
        ModelProperty::Liveness,
        ModelProperty::Entered,
    ];

    /// The properties of `family`, in report order (none for the families the model checker
    /// does not judge).
    pub fn of_family(family: Family) -> &'static [ModelProperty] {
        match family {
            Family::Election => &Self::ALL[0..5],
            Family::Mutex => &Self::ALL[5..9],
            _ => &[],
        }
    }

    /// The name reports use (`uniqueness`, `safety` …).
    pub fn name(self) -> &'static str {
        match self {
            ModelProperty::Uniqueness => "uniqueness",
            ModelProperty::Agreement => "agreement",
            ModelProperty::Validity => "validity",
            ModelProperty::Termination => "termination",
            ModelProperty::Elected => "elected",
            ModelProperty::Safety => "safety",
            ModelProperty::Fencing => "fencing",
            ModelProperty::Liveness => "liveness",
            ModelProperty::Entered => "entered",
        }
    }

    /// The property called `name`.
    pub fn from_name(name: &str) -> Option<ModelProperty> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }

    /// True for an `always` property (a counterexample violates it), false for a `sometimes`
    /// one (an example proves it reachable).
    pub fn always(self) -> bool {
        !matches!(self, ModelProperty::Elected | ModelProperty::Entered)
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
        for p in ModelProperty::ALL {
            assert_eq!(ModelProperty::from_name(p.name()), Some(p));
        }
        assert_eq!(ModelProperty::from_name("fifo"), None);
        let names = |f| ModelProperty::of_family(f).iter().map(|p| p.name()).collect::<Vec<_>>();
        assert_eq!(
            names(Family::Election),
            ["uniqueness", "agreement", "validity", "termination", "elected"]
        );
        assert_eq!(names(Family::Mutex), ["safety", "fencing", "liveness", "entered"]);
        assert!(names(Family::Clock).is_empty());
        assert_eq!(ModelProperty::Entered.bit(), 1 << 8);
    }
}
