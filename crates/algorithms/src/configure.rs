//! Configuring an algorithm for a run, the same way in every driver.
//!
//! The simulator, the model checker and a real node each build the topology (the kind's
//! default, [`crate::TopologyKind::default_topology`], or the shape the run chose), then call
//! [`configure`]: the algorithm reads and validates its parameters, and every parameter it did
//! not read is refused by name, with the list of those it takes.

use crate::{Algorithm, ParamError, Setup};

/// Why an algorithm could not be configured.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A parameter the algorithm reads is malformed or out of range.
    #[error("{algorithm}: {source}")]
    Param {
        /// The algorithm (its `--algo` name).
        algorithm: &'static str,
        /// What was wrong with the parameter.
        source: ParamError,
    },
    /// Parameters were given that the algorithm does not read; the message names the first.
    #[error("unknown parameter `{}` for {algorithm}; it takes: {}", keys[0], takes(allowed))]
    Unknown {
        /// The algorithm (its `--algo` name).
        algorithm: &'static str,
        /// Every unknown key, in order (never empty).
        keys: Vec<String>,
        /// The parameters the algorithm reads.
        allowed: Vec<String>,
    },
}

fn takes(allowed: &[String]) -> String {
    if allowed.is_empty() { "no parameters".into() } else { allowed.join(", ") }
}

/// Configures `A` under `setup`: runs [`Algorithm::configure`] and refuses the parameters it
/// did not read.
pub fn configure<A: Algorithm>(setup: &Setup) -> Result<A::Config, ConfigError> {
    let config = A::configure(setup).map_err(|source| ConfigError::Param { algorithm: A::NAME, source })?;
    let keys = setup.params.unknown();
    if !keys.is_empty() {
        return Err(ConfigError::Unknown { algorithm: A::NAME, keys, allowed: setup.params.asked() });
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use ringleader_core::Topology;

    use super::*;
    use crate::Params;
    use crate::clocks::lamport_clock::LamportClock;
    use crate::mutex::central::Central;

    fn setup_with<'a>(params: &'a Params, topology: &'a Topology) -> Setup<'a> {
        Setup { uids: &[1, 2, 3], topology, params, max_delay: 1_000_000, seed: 1 }
    }

    fn params(pairs: &[(&str, &str)]) -> Params {
        Params::new(pairs.iter().map(|&(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>())
    }

    #[test]
    fn unknown_parameters_are_refused_with_what_the_algorithm_takes() {
        let topology = Topology::Complete { n: 3 };
        let p = params(&[("bogus", "1"), ("zzz", "2")]);
        let e = configure::<Central>(&setup_with(&p, &topology)).unwrap_err();
        let ConfigError::Unknown { keys, allowed, .. } = &e else { panic!("{e:?}") };
        assert_eq!(keys, &["bogus", "zzz"]);
        assert!(!allowed.is_empty());
        assert!(e.to_string().starts_with("unknown parameter `bogus` for central; it takes: "), "{e}");
        let p = params(&[("x", "1")]);
        let e = configure::<LamportClock>(&setup_with(&p, &topology)).unwrap_err();
        assert_eq!(e.to_string(), "unknown parameter `x` for lamport-clock; it takes: no parameters");
    }

    #[test]
    fn a_bad_value_names_the_algorithm_and_the_parameter() {
        let topology = Topology::Complete { n: 3 };
        let p = params(&[("probe_every", "soon")]);
        let e = configure::<Central>(&setup_with(&p, &topology)).unwrap_err();
        assert!(matches!(e, ConfigError::Param { algorithm: "central", .. }), "{e:?}");
        assert!(e.to_string().starts_with("central: parameter `probe_every`: cannot read \"soon\""), "{e}");
        assert!(configure::<Central>(&setup_with(&params(&[]), &topology)).is_ok());
    }
}
